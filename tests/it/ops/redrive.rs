//! A poison message in a DLQ, redriven once its cause is fixed: its effect happens once, and
//! only the admin token sees or moves the deployment's queues.

use super::{admin_post, drain, org_with_team, thanks_rule, trigger_body, Ops};
use crate::consequences::workers;
use crate::support::api::ADMIN;
use crate::support::target;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

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
    thanks_rule(&o, &org, format!("http://127.0.0.1:{port}/hook")).await;
    o.sqs
        .send_message()
        .queue_url(&o.consequences.automation)
        .message_body(trigger_body(&org, "payment:stripe:p_poison"))
        .send()
        .await
        .unwrap();
    let w = workers(&o.env, Duration::from_millis(500), 2);
    it_dies_into_the_dlq(&o, &w).await;
    // The cause is fixed: the target is up. One redrive moves it back, once.
    let up = target::spawn_at(&format!("127.0.0.1:{port}"), Duration::ZERO, 200).await;
    one_redrive_moves_it_once(&o).await;
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
    // Whose the queues are is decided first: a key learns no queue's name, the admin does.
    let unknown = "/ops/dlq/nope/redrive";
    assert_eq!(o.post(unknown, &key, "k-nope", &Value::Null).await.0, 403);
    assert_eq!(o.post(unknown, ADMIN, "k-nope", &Value::Null).await.0, 404);
    let worker = "/ops/consumers/nope/pause";
    assert_eq!(o.post(worker, &key, "w-nope", &Value::Null).await.0, 403);
    // Whose they are is decided before the request is read: without an Idempotency-Key and
    // with a list of no ids, a key is still refused 403.
    let auth = format!("Bearer {key}");
    let headers = [("authorization", auth.as_str())];
    let body = br#"{"ids": []}"#.to_vec();
    let req = crate::support::request("POST", "/ops/dlq/automation/redrive", &headers, body);
    let res = Box::pin(o.app.handle(req)).await.unwrap();
    assert_eq!(res.status().as_u16(), 403);
}

/// The trigger fails each receive (connection refused): after two, SQS moves it to the DLQ,
/// where the operator sees it.
async fn it_dies_into_the_dlq(o: &Ops, w: &crate::consequences::Workers) {
    // Each receive fails (connection refused): after two, SQS moves it to the DLQ.
    let started = Instant::now();
    let dead = loop {
        Box::pin(drain(o, w)).await;
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
}

/// A redrive, the same click again, and another: one message moved.
async fn one_redrive_moves_it_once(o: &Ops) {
    let redrive = |key| admin_post(o, "/ops/dlq/automation/redrive", key);
    let (status, moved) = redrive("redrive-1").await;
    assert_eq!((status, moved), (200, json!({"moved": 1, "more": false})));
    let (_, again) = redrive("redrive-1").await;
    assert_eq!(
        again,
        json!({"moved": 1, "more": false}),
        "the same key: the stored answer"
    );
    let (_, second) = redrive("redrive-2").await;
    assert_eq!(
        second,
        json!({"moved": 0, "more": false}),
        "nothing left to move"
    );
}
