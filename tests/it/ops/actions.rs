//! The four actions, each safe twice: a poison message redriven after its cause is fixed, a
//! replay that finds everything done and one that brings a lost notification back, two
//! resolutions at once, and `resend` clicked twice.

use super::{ids, Ops};
use crate::consequences::{stream_event, workers, Workers};
use crate::support::api::ADMIN;
use crate::support::queues::{delete, event, receive};
use crate::support::{fixtures, target};
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::Utc;
use firmspace::effects::automation::{self, Action};
use firmspace::effects::queue::Publisher;
use firmspace::effects::Trigger;
use firmspace::ids::{ExternalId, OrgId};
use firmspace::money::Currency;
use firmspace::orgs::{self, Member};
use firmspace::payments::invoice::{self, Links};
use firmspace::payments::{register_payment, InvoiceStatus, NewInvoice, PaymentInput, Source};
use firmspace::review::ReviewItem;
use rust_decimal_macros::dec;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// Runs every visible message of each queue through its worker, as Lambda's event source
/// mapping would: what succeeded is deleted, what failed stays.
async fn drain(o: &Ops, w: &Workers) {
    let q = &o.consequences;
    for (url, which) in [(&q.notifications, 0), (&q.activity, 1), (&q.automation, 2)] {
        let messages = receive(&o.sqs, url, 0).await;
        if messages.is_empty() {
            continue;
        }
        let response = match which {
            0 => Box::pin(w.notify.process(event(&messages), Utc::now())).await,
            1 => Box::pin(w.activity.process(event(&messages), Utc::now())).await,
            _ => Box::pin(w.automation.process(event(&messages), Utc::now())).await,
        };
        let failed: Vec<&str> = response
            .batch_item_failures
            .iter()
            .map(|f| f.item_identifier.as_str())
            .collect();
        let done: Vec<_> = messages
            .into_iter()
            .filter(|m| !failed.contains(&m.message_id().unwrap_or_default()))
            .collect();
        delete(&o.sqs, url, &done).await;
    }
}

async fn org_with_team(o: &Ops) -> OrgId {
    let org = fixtures::org(&o.env).await.id;
    let member = Member {
        user_id: "u1".into(),
        name: "Olena".into(),
    };
    orgs::add_member(&o.env.store, &org, &member, Utc::now())
        .await
        .unwrap();
    org
}

fn trigger_body(org: &OrgId, event_key: &str) -> String {
    json!({"type": "trigger", "org": org.as_str(), "trigger": "invoice.paid", "event_key": event_key,
           "at": "2026-12-03T10:00:00.000Z", "context": {"invoice_id": "inv_1"}})
    .to_string()
}

#[tokio::test]
async fn a_poison_message_is_redriven_after_its_cause_is_fixed_and_its_effect_happens_once() {
    let o = Ops::new().await;
    let org = org_with_team(&o).await;
    // The target is down: its port is reserved, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let hook =
        crate::automation::outbound(&o.env, &org, format!("http://127.0.0.1:{port}/hook"), None)
            .await;
    automation::create_rule(
        &o.env.store,
        &org,
        Trigger::InvoicePaid,
        Action::SendMessage {
            integration_id: hook,
            text: "Thanks!".into(),
        },
        Utc::now(),
    )
    .await
    .unwrap();
    o.sqs
        .send_message()
        .queue_url(&o.consequences.automation)
        .message_body(trigger_body(&org, "payment:stripe:p_poison"))
        .send()
        .await
        .unwrap();
    let w = workers(&o.env, Duration::from_millis(500), 2);
    // Each receive fails (connection refused): after two, SQS moves it to the DLQ.
    let started = Instant::now();
    let dead = loop {
        Box::pin(drain(&o, &w)).await;
        let (_, dead) = o.get("/ops/dlq/automation", ADMIN).await;
        if !dead["items"].as_array().unwrap().is_empty()
            || started.elapsed() > Duration::from_secs(30)
        {
            break dead;
        }
        tokio::time::sleep(Duration::from_millis(600)).await;
    };
    let items = dead["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{dead}");
    assert_eq!(items[0]["body"]["event_key"], "payment:stripe:p_poison");
    assert!(items[0]["receives"].as_u64().unwrap() >= 2, "{dead}");
    // Peeking consumed nothing.
    assert_eq!(
        o.get("/ops/dlq/automation", ADMIN).await.1["items"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let (_, summary) = o.get("/ops/summary", ADMIN).await;
    assert_eq!(summary["queues"]["automation"]["dead"], 1, "{summary}");

    // The cause is fixed: the target is up. One redrive moves it back, once.
    let up = target::spawn_at(&format!("127.0.0.1:{port}"), Duration::ZERO, 200).await;
    let (status, moved) = o
        .post(
            "/ops/dlq/automation/redrive",
            ADMIN,
            "redrive-1",
            &Value::Null,
        )
        .await;
    assert_eq!((status, moved), (200, json!({"moved": 1, "more": false})));
    let (_, again) = o
        .post(
            "/ops/dlq/automation/redrive",
            ADMIN,
            "redrive-1",
            &Value::Null,
        )
        .await;
    assert_eq!(
        again,
        json!({"moved": 1, "more": false}),
        "the same key: the stored answer"
    );
    let (_, second) = o
        .post(
            "/ops/dlq/automation/redrive",
            ADMIN,
            "redrive-2",
            &Value::Null,
        )
        .await;
    assert_eq!(
        second,
        json!({"moved": 0, "more": false}),
        "nothing left to move"
    );
    let started = Instant::now();
    while up.seen().is_empty() && started.elapsed() < Duration::from_secs(10) {
        Box::pin(drain(&o, &w)).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Box::pin(drain(&o, &w)).await;
    assert_eq!(up.seen().len(), 1, "the effect happened once");
    // An organisation's key cannot see or move the deployment's queues.
    let key = crate::support::api::new_org(&o.api).await;
    assert_eq!(o.get("/ops/dlq/automation", &key).await.0, 403);
    assert_eq!(
        o.post("/ops/dlq/automation/redrive", &key, "k", &Value::Null)
            .await
            .0,
        403
    );
}

/// Books a payment that closes a new invoice (no owner: the team is told).
async fn closing_payment(o: &Ops, org: &OrgId, id: &str) -> firmspace::store::Item {
    let inv = invoice::create(
        &o.env.store,
        org,
        NewInvoice {
            currency: Currency::parse("UAH").unwrap(),
            gross: dec!(40),
            status: InvoiceStatus::Open,
            links: Links {
                contact_id: Some("c1".into()),
                ..Links::default()
            },
        },
        Utc::now(),
    )
    .await
    .unwrap();
    let input = PaymentInput {
        org: org.clone(),
        invoice_ref: Some(inv.id.as_str().to_owned()),
        source: Source::Stripe,
        external_id: ExternalId::parse("id", id).unwrap(),
        amount: None,
        currency: None,
        at: Utc::now(),
        actor: "test".into(),
        reverses: None,
        reversible: false,
    };
    register_payment(&o.env.store, &input).await.unwrap();
    o.env.store.get(&input.pk()).await.unwrap().expect("stored")
}

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
    let item = closing_payment(&o, &org, "pi_replay").await;
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
    let (status, replayed) = o
        .post(
            &format!("/ops/events/{id}/replay"),
            ADMIN,
            "replay-1",
            &Value::Null,
        )
        .await;
    assert_eq!((status, replayed), (200, json!({"sent": 3})));
    Box::pin(drain(&o, &w)).await;
    let after = o.env.kinds().await;
    for kind in ["notification", "activity", "task", "fired"] {
        assert_eq!(after.get(kind), counts.get(kind), "{kind}");
    }

    // The notification is lost (deleted): the list says so, and a replay brings back exactly it.
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
    let (_, lost) = o.get(&path, ADMIN).await;
    assert!(
        states(&lost).contains(&("notification".into(), "missing".into())),
        "{lost}"
    );
    assert_eq!(
        o.get(&format!("/ops/summary?org={org}"), ADMIN).await.1["events"]["payment"]["waiting"],
        1
    );
    let (_, replayed) = o
        .post(
            &format!("/ops/events/{id}/replay"),
            ADMIN,
            "replay-2",
            &Value::Null,
        )
        .await;
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

#[tokio::test]
async fn two_people_resolving_at_once_leave_one_resolution() {
    let o = Ops::new().await;
    let key = crate::support::api::new_org(&o.api).await;
    let org = firmspace::orgs::authenticate(&o.env.store, &key)
        .await
        .unwrap()
        .unwrap();
    ReviewItem {
        org: org.clone(),
        kind: "payment".into(),
        reason: "overpayment".into(),
        key: "payment:stripe:pi_9".into(),
        at: Utc::now(),
        detail: json!({}),
    }
    .put(&o.env.store)
    .await
    .unwrap();
    let (_, open) = o.get("/ops/review?state=open", &key).await;
    let id = ids(&open)[0].clone();
    let path = format!("/ops/review/{id}/resolve");
    let (note_a, note_b) = (
        json!({"note": "refunded by hand"}),
        json!({"note": "checked"}),
    );
    let (a, b) = tokio::join!(
        o.post(&path, &key, "person-a", &note_a),
        o.post(&path, ADMIN, "person-b", &note_b),
    );
    let mut statuses = [a.0, b.0];
    statuses.sort();
    assert_eq!(statuses, [200, 409], "{a:?} {b:?}");
    let (won, lost) = if a.0 == 200 {
        (a.1.clone(), b.1.clone())
    } else {
        (b.1.clone(), a.1.clone())
    };
    assert_eq!(won["state"], "resolved");
    assert!(won["by"] == org.as_str() || won["by"] == "admin", "{won}");
    assert_eq!(lost["error"], "not_open");
    assert_eq!(
        lost["outcome"]["by"], won["by"],
        "the loser is told who resolved it"
    );
    let (_, resolved) = o.get("/ops/review?state=resolved", &key).await;
    assert_eq!(resolved["items"].as_array().unwrap().len(), 1);
    assert_eq!(resolved["items"][0]["note"], won["note"]);
    assert_eq!(
        o.get("/ops/review?state=open", &key).await.1["items"],
        json!([])
    );
    assert_eq!(o.get("/ops/summary", &key).await.1["review"]["open"], 0);
    // The same click again gets the stored answer.
    let (status, repeat) = o
        .post(
            &path,
            &key,
            "person-a",
            &json!({"note": "refunded by hand"}),
        )
        .await;
    assert_eq!(status, if a.0 == 200 { 200 } else { 409 });
    assert_eq!(repeat, a.1);
    // Without a key, nothing happens.
    let auth = format!("Bearer {key}");
    let res = o
        .app
        .handle(crate::support::request(
            "POST",
            &path,
            &[("authorization", &auth)],
            b"{\"note\":\"x\"}".to_vec(),
        ))
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
}

#[tokio::test]
async fn resend_clicked_twice_makes_one_more_request_with_the_same_key() {
    let o = Ops::new().await;
    let key = crate::support::api::new_org(&o.api).await;
    let org = firmspace::orgs::authenticate(&o.env.store, &key)
        .await
        .unwrap()
        .unwrap();
    // The target answers after 800 ms; the worker waits 200 ms and has no status URL to ask.
    let server = target::spawn(Duration::from_millis(800), 200).await;
    let hook = crate::automation::outbound(&o.env, &org, server.url(), None).await;
    let rule = automation::create_rule(
        &o.env.store,
        &org,
        Trigger::InvoicePaid,
        Action::SendMessage {
            integration_id: hook,
            text: "Thanks!".into(),
        },
        Utc::now(),
    )
    .await
    .unwrap();
    let w = workers(&o.env, Duration::from_millis(200), 5);
    let body = trigger_body(&org, "payment:stripe:p_resend");
    w.automation
        .process(crate::support::queues::event_of("t1", &body), Utc::now())
        .await;
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert_eq!(server.seen().len(), 1);
    let (_, check) = o.get("/ops/runs?state=needs_check", &key).await;
    let items = check["items"].as_array().unwrap();
    assert_eq!(
        (items.len(), items[0]["resendable"].as_bool()),
        (1, Some(true)),
        "{check}"
    );
    assert_eq!(
        o.get("/ops/summary", &key).await.1["runs"]["needs_check"],
        1
    );
    let path = format!("/ops/runs/{}/decide", ids(&check)[0]);
    let resend = json!({"decision": "resend"});
    // A double click: the same key twice at once, then a second click with a new key.
    let (first, twin) = tokio::join!(
        o.post(&path, &key, "click-1", &resend),
        o.post(&path, &key, "click-1", &resend),
    );
    let answers = [first.clone(), twin.clone()];
    assert!(
        answers
            .iter()
            .any(|(s, a)| *s == 200 && a["state"] == "sent"),
        "{answers:?}"
    );
    assert!(
        answers
            .iter()
            .all(|(s, a)| *s == 200 || a["error"] == "request_in_progress"),
        "{answers:?}"
    );
    let (status, later) = o.post(&path, &key, "click-2", &resend).await;
    assert_eq!(
        (status, later["outcome"]["state"].as_str()),
        (409, Some("sent"))
    );
    let expected = automation::idempotency_key(
        &org,
        &automation::run_key(
            &rule.rule_id,
            &firmspace::ids::EventKey::parse("payment:stripe:p_resend").unwrap(),
        ),
    );
    assert_eq!(
        server.seen(),
        [expected.clone(), expected],
        "one more request, with the run's key"
    );
    assert_eq!(
        o.get("/ops/summary", &key).await.1["runs"]["needs_check"],
        0
    );
    let (_, sent) = o.get("/ops/runs?state=sent", &key).await;
    assert_eq!(sent["items"][0]["attempts"], 2);
}
