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

fn states(list: &Value) -> Vec<(String, String)> {
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

    // Everything happened: a replay sends the three again and each is absorbed by its key.
    let id = ids(&done)[0].clone();
    let replay = format!("/ops/events/{id}/replay");
    let (status, replayed) = admin_post(&o, &replay, "replay-1").await;
    assert_eq!((status, replayed), (200, json!({"sent": 3})));
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
    let (_, replayed) = admin_post(&o, &replay, "replay-2").await;
    assert_eq!(replayed["sent"], 3);
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
