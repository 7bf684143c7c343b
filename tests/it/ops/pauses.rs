//! Pausing an integration: its deliveries are stored and answered as ever, their consequences
//! wait (held by the fan-out), and resuming sends each of them once.

use super::{admin_post, drain, org_with_team, Ops};
use crate::consequences::{stream_event, workers};
use crate::support::api::ADMIN;
use crate::support::fixtures::signed_post;
use crate::support::queues::receive;
use chrono::Utc;
use firmspace::calls::providers::CallSettings;
use firmspace::effects::queue::Publisher;
use firmspace::ids::IntegrationId;
use firmspace::integrations::{self, Integration, Settings};
use firmspace::signature::standard;
use serde_json::json;
use std::time::Duration;

/// A missed call from `call_id`, signed now.
fn missed(hook: &IntegrationId, secret: &str, call_id: &str) -> lambda_http::Request {
    let body =
        json!({"type": "call.completed", "data": {"call_id": call_id, "direction": "inbound",
        "peer": "+380441234567", "status": "no-answer", "duration": 0}})
        .to_string();
    let now = Utc::now().timestamp();
    signed_post(hook, "calls", secret, &format!("w-{call_id}"), now, &body)
}

#[tokio::test]
async fn a_paused_integrations_consequences_wait_and_are_sent_once_when_it_resumes() {
    let o = Ops::new().await;
    let org = org_with_team(&o).await;
    let secret = standard::generate_secret();
    let hook = IntegrationId::generate(&org);
    let integration = Integration {
        id: hook.clone(),
        settings: Settings::Calls(CallSettings::Standard {
            secret: secret.clone().into(),
        }),
        created_at: Utc::now(),
    };
    integrations::create(&o.env.store, &integration)
        .await
        .unwrap();
    let pause = format!("/ops/integrations/{}/pause", hook.id);
    let (status, paused) = admin_post(&o, &pause, "pause-1").await;
    assert_eq!(
        (status, paused["changed"].as_bool()),
        (200, Some(true)),
        "{paused}"
    );
    let (_, again) = admin_post(&o, &pause, "pause-2").await;
    assert_eq!(again["changed"], false, "paused already: nothing changes");
    let (_, listed) = o.get(&format!("/ops/integrations?org={org}"), ADMIN).await;
    assert_eq!(listed["items"][0]["integration_id"], hook.id);
    assert!(listed["items"][0]["paused_by"]
        .as_str()
        .unwrap()
        .starts_with("admin"));

    // Stored and answered as ever; its consequences held by the fan-out, twice delivered.
    let calls = call_webhook::app(o.env.store.clone(), "https://hooks.test");
    let res = calls
        .respond(&missed(&hook, &secret, "c-1"), Utc::now())
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let item = o.env.items_of("call").await.remove(0);
    let publisher = Publisher {
        sqs: o.sqs.clone(),
        queues: o.consequences.clone(),
    };
    let fanout = fanout::App::new(publisher, o.env.store.clone());
    for seq in ["1", "2"] {
        let out = fanout.process(stream_event(&item, seq), Utc::now()).await;
        assert!(out.batch_item_failures.is_empty());
    }
    let q = &o.consequences;
    for url in [&q.notifications, &q.activity, &q.automation] {
        assert!(
            receive(&o.sqs, url, 1).await.is_empty(),
            "nothing published"
        );
    }
    let (_, listed) = o.get(&format!("/ops/integrations?org={org}"), ADMIN).await;
    assert_eq!(listed["items"][0]["held"], 1);

    // Resumed: the held call's three consequences are sent, once.
    let resume = format!("/ops/integrations/{}/resume", hook.id);
    let (status, resumed) = admin_post(&o, &resume, "resume-1").await;
    assert_eq!(
        (status, resumed["events"].as_u64(), resumed["sent"].as_u64()),
        (200, Some(1), Some(3)),
        "{resumed}"
    );
    let w = workers(&o.env, Duration::from_secs(2), 5);
    Box::pin(drain(&o, &w)).await;
    let notes = firmspace::effects::notify::list(&o.env.store, &org, "u1")
        .await
        .unwrap();
    assert_eq!(notes.len(), 1, "the missed call's notification, once");
    let (_, resumed_again) = admin_post(&o, &resume, "resume-2").await;
    assert_eq!(
        (
            resumed_again["resumed"].as_bool(),
            resumed_again["sent"].as_u64()
        ),
        (Some(false), Some(0))
    );
    let (_, listed) = o.get(&format!("/ops/integrations?org={org}"), ADMIN).await;
    assert_eq!(listed["items"], json!([]));

    // Running again: the next call's consequences go out at once.
    let res = calls
        .respond(&missed(&hook, &secret, "c-2"), Utc::now())
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let next = o
        .env
        .items_of("call")
        .await
        .into_iter()
        .find(|i| {
            i.get("call_id")
                .and_then(|v| v.as_s().ok())
                .is_some_and(|c| c == "c-2")
        })
        .unwrap();
    let out = fanout.process(stream_event(&next, "3"), Utc::now()).await;
    assert!(out.batch_item_failures.is_empty());
    assert_eq!(receive(&o.sqs, &q.notifications, 1).await.len(), 1);
}
