//! Replays: one that finds every consequence done changes nothing, one after a notification
//! was lost brings exactly that notification back.

use super::{admin_post, drain, ids, org_with_team, Ops};
use crate::consequences::{closing_payment_linked, stream_event, workers};
use crate::support::api::ADMIN;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::Utc;
use firmspace::effects::queue::Publisher;
use firmspace::payments::invoice::Links;
use serde_json::{json, Value};
use std::time::Duration;

/// The (kind, state) of each consequence of the list's first event.
pub(super) fn states(list: &Value) -> Vec<(String, String)> {
    list["items"][0]["consequences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["kind"].as_str().unwrap().to_owned(),
                c["state"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_replay_absorbs_what_happened_and_brings_back_exactly_the_lost_notification() {
    let o = Ops::new().await;
    let org = org_with_team(&o).await;
    let links = Links {
        contact_id: Some("c1".into()),
        ..Links::default()
    };
    let item = closing_payment_linked(&o.env, &org, links, "pi_replay").await;
    let fanout = fanout::App::new(
        Publisher {
            sqs: o.sqs.clone(),
            queues: o.consequences.clone(),
        },
        o.env.store.clone(),
    );
    let w = workers(&o.env, Duration::from_secs(2), 5);
    let path = format!("/ops/events?kind=payment&org={org}");
    let (_, before) = o.get(&path, ADMIN).await;
    assert!(
        states(&before).iter().all(|(_, s)| s == "missing"),
        "{before}"
    );
    assert!(fanout
        .process(stream_event(&item, "1"), Utc::now())
        .await
        .batch_item_failures
        .is_empty());
    Box::pin(drain(&o, &w)).await;
    let (_, done) = o.get(&path, ADMIN).await;
    let kinds: Vec<String> = states(&done)
        .into_iter()
        .map(|(k, s)| format!("{k}:{s}"))
        .collect();
    assert_eq!(
        kinds,
        ["activity:done", "notification:done", "rule_run:done"],
        "{done}"
    );
    assert_eq!(
        o.get(&format!("/ops/summary?org={org}"), ADMIN).await.1["events"]["payment"]["waiting"],
        0
    );
    let counts = o.env.kinds().await;

    // Everything happened: a replay has nothing missing to send.
    let id = ids(&done)[0].clone();
    let replay = format!("/ops/events/{id}/replay");
    let (status, replayed) = admin_post(&o, &replay, "replay-1").await;
    assert_eq!((status, replayed), (200, json!({"sent": 0})));
    Box::pin(drain(&o, &w)).await;
    let after = o.env.kinds().await;
    for kind in ["notification", "activity", "task", "fired"] {
        assert_eq!(after.get(kind), counts.get(kind), "{kind}");
    }

    // The notification is lost (deleted): the list says so, and a replay brings back exactly it.
    lose_the_notification(&o).await;
    let (_, lost) = o.get(&path, ADMIN).await;
    assert!(
        states(&lost).contains(&("notification".into(), "missing".into())),
        "{lost}"
    );
    // The event stopped waiting when its last consequence happened: an item deleted by hand
    // afterwards shows on the list (which reads the items), not in the figure.
    assert_eq!(
        o.get(&format!("/ops/summary?org={org}"), ADMIN).await.1["events"]["payment"]["waiting"],
        0
    );
    // "Missing" is one thing: the window's dry run counts the one the list shows.
    let window = json!({
        "kind": "payment",
        "from": (Utc::now() - chrono::Duration::hours(1)).to_rfc3339(),
        "to": (Utc::now() + chrono::Duration::minutes(1)).to_rfc3339(),
        "dry_run": true,
    });
    let bulk = format!("/ops/events/replay?org={org}");
    let (status, counted) = o.post(&bulk, ADMIN, "replay-dry", &window).await;
    assert_eq!(
        (status, counted),
        (
            200,
            json!({"events": 1, "missing": 1, "dry_run": true, "more": false, "cursor": null})
        )
    );
    let (_, replayed) = admin_post(&o, &replay, "replay-2").await;
    assert_eq!(replayed["sent"], 1, "only the lost notification is sent");
    Box::pin(drain(&o, &w)).await;
    assert_eq!(
        o.env.kinds().await.get("notification"),
        counts.get("notification")
    );
    let (_, back) = o.get(&path, ADMIN).await;
    assert!(states(&back).iter().all(|(_, s)| s == "done"), "{back}");
    let notes = firmspace::effects::notify::list(&o.env.store, &org, "u1")
        .await
        .unwrap();
    assert_eq!(notes.len(), 1, "one notification, back");
}

/// The one notification deleted from the table, as if it had been lost.
async fn lose_the_notification(o: &Ops) {
    let dynamo = aws_sdk_dynamodb::Client::new(&crate::support::sdk_config().await);
    let notification = o
        .env
        .items()
        .await
        .into_iter()
        .find(|i| i["kind"].as_s().ok().map(String::as_str) == Some("notification"))
        .unwrap();
    dynamo
        .delete_item()
        .table_name(o.env.store.table())
        .key("pk", notification["pk"].clone())
        .key("sk", AttributeValue::S("item".into()))
        .send()
        .await
        .unwrap();
}

#[tokio::test]
async fn a_replayed_incoming_sms_sends_its_messages_consequences_again() {
    let o = Ops::new().await;
    let (key, _) = super::org_by_key(&o).await;
    let call = |method: &'static str, path: &'static str, body: Value| {
        crate::support::api::call(&o.api, method, path, &key, body)
    };
    let (status, _) = call(
        "POST",
        "/api/members",
        json!({"user_id": "u1", "name": "Olena"}),
    )
    .await;
    assert_eq!(status, 201);
    let (_, made) = call(
        "POST",
        "/api/integrations",
        json!({"kind": "sms", "provider": "standard"}),
    )
    .await;
    let (id, secret) = (
        made["integration_id"].as_str().unwrap(),
        made["secret"].as_str().unwrap(),
    );
    let raw = crate::ledger::event("received", "MO-replay", None).to_string();
    let at = Utc::now().timestamp();
    let signature =
        firmspace::signature::standard::sign(secret, "evt_mo", at, raw.as_bytes()).unwrap();
    let req = crate::support::request(
        "POST",
        &format!("/hooks/{id}/sms"),
        &[
            ("content-type", "application/json"),
            ("webhook-id", "evt_mo"),
            ("webhook-timestamp", &at.to_string()),
            ("webhook-signature", &signature),
        ],
        raw.into_bytes(),
    );
    let hook = sms_webhook::app(o.env.store.clone());
    assert_eq!(hook.handle(req).await.unwrap().status(), 200);
    let (_, events) = o.get("/ops/events?kind=sms", &key).await;
    let event = &ids(&events)[0];
    let (status, replayed) = o
        .post(
            &format!("/ops/events/{event}/replay"),
            &key,
            "replay-sms",
            &Value::Null,
        )
        .await;
    assert_eq!(status, 200, "{replayed}");
    let consequences = events["items"][0]["consequences"].as_array().unwrap().len();
    assert!(consequences > 0, "{events}");
    assert_eq!(
        replayed["sent"].as_u64(),
        Some(consequences as u64),
        "its message's, sent again"
    );
}

#[tokio::test]
async fn a_bulk_replay_counts_first_then_sends_each_missing_consequence_once() {
    let o = Ops::new().await;
    let org = org_with_team(&o).await;
    let hook = super::waiting::calls_hook(&o, &org).await;
    // Five missed calls stored; the stream never carried them (nothing was published).
    super::waiting::missed_calls(&o, (&hook.0, &hook.1), "lost", 5).await;
    let from = (Utc::now() - chrono::Duration::hours(1)).to_rfc3339();
    let to = (Utc::now() + chrono::Duration::minutes(1)).to_rfc3339();
    let path = format!("/ops/events/replay?org={org}");
    let window =
        |dry_run: bool| json!({"kind": "call", "from": from, "to": to, "dry_run": dry_run});
    let (status, counted) = o.post(&path, ADMIN, "bulk-dry", &window(true)).await;
    assert_eq!(
        (status, counted),
        (
            200,
            json!({"events": 5, "missing": 15, "dry_run": true, "more": false, "cursor": null})
        )
    );
    let q = &o.consequences;
    for url in [&q.notifications, &q.automation] {
        assert!(
            crate::support::queues::receive(&o.sqs, url, 0)
                .await
                .is_empty(),
            "a dry run sends nothing"
        );
    }
    // Refused: a window over 7 days, one without `to`, one backwards.
    let long =
        json!({"kind": "call", "from": "2026-11-01T00:00:00Z", "to": "2026-11-09T00:00:00Z"});
    let (status, refused) = o.post(&path, ADMIN, "bulk-long", &long).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("window_too_long"))
    );
    let open = json!({"kind": "call", "from": from});
    assert_eq!(o.post(&path, ADMIN, "bulk-open", &open).await.0, 400);
    let backwards = json!({"kind": "call", "from": to, "to": from});
    let (status, refused) = o.post(&path, ADMIN, "bulk-back", &backwards).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("invalid_window"))
    );

    // Sent: the fifteen missing, once; a second replay under a new key sends none.
    let (status, sent) = o.post(&path, ADMIN, "bulk-1", &window(false)).await;
    assert_eq!(
        (status, sent),
        (
            200,
            json!({"events": 5, "sent": 15, "more": false, "cursor": null})
        )
    );
    let (_, again) = o.post(&path, ADMIN, "bulk-2", &window(false)).await;
    assert_eq!(again["sent"], 0, "{again}");
    let w = workers(&o.env, Duration::from_secs(2), 5);
    for _ in 0..5 {
        Box::pin(drain(&o, &w)).await;
    }
    let notes = firmspace::effects::notify::list(&o.env.store, &org, "u1")
        .await
        .unwrap();
    assert_eq!(notes.len(), 5, "one notification per missed call");
    let (_, summary) = o.get(&format!("/ops/summary?org={org}"), ADMIN).await;
    assert_eq!(summary["events"]["call"]["waiting"], 0, "{summary}");
    let (_, after) = o.post(&path, ADMIN, "bulk-dry-2", &window(true)).await;
    assert_eq!(
        after,
        json!({"events": 5, "missing": 0, "dry_run": true, "more": false, "cursor": null})
    );
}

#[tokio::test]
async fn the_admins_key_is_claimed_per_organisation() {
    let o = Ops::new().await;
    let (a, b) = (org_with_team(&o).await, org_with_team(&o).await);
    let links = Links {
        contact_id: Some("c1".into()),
        ..Links::default()
    };
    // One payment in A and two in B, their consequences never sent.
    closing_payment_linked(&o.env, &a, links.clone(), "pi_org_a").await;
    closing_payment_linked(&o.env, &b, links.clone(), "pi_org_b").await;
    closing_payment_linked(&o.env, &b, links, "pi_org_b2").await;
    let window = json!({
        "kind": "payment",
        "from": (Utc::now() - chrono::Duration::hours(1)).to_rfc3339(),
        "to": (Utc::now() + chrono::Duration::minutes(1)).to_rfc3339(),
    });
    for (org, events) in [(&a, 1), (&b, 2)] {
        let path = format!("/ops/events/replay?org={org}");
        let (status, sent) = o.post(&path, ADMIN, "one-key", &window).await;
        assert_eq!(status, 200, "{sent}");
        assert_eq!(
            (sent["events"].as_u64(), sent["sent"].as_u64()),
            (Some(events), Some(3 * events)),
            "{org}: its own replay, not the other's answer: {sent}"
        );
    }
}

#[tokio::test]
async fn a_dry_run_past_its_time_answers_what_it_counted_and_a_cursor_to_go_on() {
    use firmspace::ops::events::{dry_run_within, Window};
    use firmspace::ops::EventKind;
    let o = Ops::new().await;
    let org = org_with_team(&o).await;
    let hook = super::waiting::calls_hook(&o, &org).await;
    // 60 events: more than one page (50) of the list.
    super::waiting::missed_calls(&o, (&hook.0, &hook.1), "many", 60).await;
    let window = Window {
        kind: EventKind::Call,
        from: Utc::now() - chrono::Duration::hours(1),
        to: Utc::now() + chrono::Duration::minutes(1),
    };
    let org_id = org.clone();
    // Its time spent after the first page: that page's figures, and where to go on.
    let first = dry_run_within(&o.env.store, &org_id, (&window, None), Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(first.events, 50, "{first:?}");
    let cursor = first.cursor.clone().expect("a cursor to go on");
    let rest = dry_run_within(
        &o.env.store,
        &org_id,
        (&window, Some(&cursor)),
        Duration::ZERO,
    )
    .await
    .unwrap();
    assert_eq!((rest.events, rest.cursor), (10, None), "the rest, and done");
    assert_eq!(first.missing + rest.missing, 180, "three consequences each");
}
