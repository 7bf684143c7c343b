//! Automation runs in-process against ministack, with a real HTTP server on loopback as the
//! outbound target: timeout after success, a status check, poison messages, a vanished integration.

use crate::consequences::workers;
use crate::support::app::review;
use crate::support::queues::{self, event, event_of, receive};
use crate::support::{fixtures, target, TestEnv};
use chrono::Utc;
use firmspace::effects::automation::{self, Action};
use firmspace::effects::outbound::OutboundTarget;
use firmspace::effects::runs::RunState;
use firmspace::effects::Trigger;
use firmspace::ids::{EventKey, IntegrationId, OrgId};
use firmspace::integrations::Settings;
use serde_json::json;
use std::time::Duration;

pub(crate) async fn outbound(
    env: &TestEnv,
    org: &OrgId,
    url: String,
    status_url: Option<String>,
) -> IntegrationId {
    let target = OutboundTarget {
        url,
        status_url,
        secret: firmspace::signature::standard::generate_secret().into(),
        previous: None,
        port: None,
    };
    fixtures::any_integration(env, org, Settings::Outbound(target)).await
}

/// A rule that sends `text` through `integration_id` when an invoice is paid.
async fn send_rule(
    env: &TestEnv,
    org: &OrgId,
    integration_id: IntegrationId,
    text: &str,
) -> automation::Rule {
    let action = Action::SendMessage {
        integration_id,
        text: text.into(),
    };
    rule(env, org, action).await
}

/// The state of `rule`'s run for `event_key`.
async fn run_state(
    env: &TestEnv,
    org: &OrgId,
    rule: &automation::Rule,
    event_key: &str,
) -> Option<RunState> {
    firmspace::effects::runs::run_state(&env.store, org, &rule.rule_id, &ek(event_key))
        .await
        .unwrap()
}

fn ek(raw: &str) -> EventKey {
    EventKey::parse(raw).unwrap()
}

fn trigger(org: &OrgId, event_key: &str) -> String {
    json!({"type": "trigger", "org": org.as_str(), "trigger": "invoice.paid", "event_key": event_key,
           "at": "2026-12-02T10:00:00.000Z", "context": {"invoice_id": "inv_1"}})
    .to_string()
}

#[tokio::test]
async fn a_timeout_after_success_without_a_status_url_is_never_resent_and_needs_a_check() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await.id;
    let server = target::spawn(Duration::from_millis(800), 200).await;
    let hook = outbound(&env, &org, server.url(), None).await;
    let rule = send_rule(&env, &org, hook.clone(), "Thanks!").await;
    let w = workers(&env, Duration::from_millis(200), 5);
    for _ in 0..3 {
        let response = w
            .automation
            .process(
                event_of("t1", &trigger(&org, "payment:standard:p1")),
                Utc::now(),
            )
            .await;
        assert!(response.batch_item_failures.is_empty());
    }
    tokio::time::sleep(Duration::from_millis(900)).await;
    let run_key = automation::run_key(&rule.rule_id, &ek("payment:standard:p1"));
    assert_eq!(
        server.seen(),
        [automation::idempotency_key(&org, &run_key)],
        "the target saw one request"
    );
    let state = run_state(&env, &org, &rule, "payment:standard:p1").await;
    assert_eq!(state, Some(RunState::NeedsCheck));
    let review = review(&env, &org).await;
    assert_eq!(
        (review.len(), review[0]["reason"].as_str()),
        (1, Some("needs_check"))
    );
}

#[tokio::test]
async fn a_timeout_after_success_is_settled_by_asking_the_target_for_the_key() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await.id;
    let server = target::spawn(Duration::from_millis(800), 200).await;
    let hook = outbound(&env, &org, server.url(), Some(server.status_url())).await;
    let rule = send_rule(&env, &org, hook.clone(), "Thanks!").await;
    let w = workers(&env, Duration::from_millis(200), 5);
    for _ in 0..3 {
        w.automation
            .process(
                event_of("t1", &trigger(&org, "payment:standard:p2")),
                Utc::now(),
            )
            .await;
    }
    assert_eq!(server.seen().len(), 1);
    let state = run_state(&env, &org, &rule, "payment:standard:p2").await;
    assert_eq!(state, Some(RunState::Sent));
    assert_eq!(env.count("review").await, 0);
}

#[tokio::test]
async fn a_poison_message_ends_in_the_dlq_and_in_the_review_list() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await.id;
    let server = target::spawn(Duration::ZERO, 503).await;
    let hook = outbound(&env, &org, server.url(), None).await;
    send_rule(&env, &org, hook.clone(), "hi").await;
    let sqs = queues::client().await;
    let (url, dlq) = queues::queue(&sqs, "automation", 1, Some(2)).await;
    let dlq = dlq.unwrap();
    sqs.send_message()
        .queue_url(&url)
        .message_body(trigger(&org, "payment:standard:p3"))
        .send()
        .await
        .unwrap();
    let w = workers(&env, Duration::from_secs(1), 2);
    let mut receives = 0;
    while receives < 2 {
        let got = receive(&sqs, &url, 3).await;
        assert_eq!(got.len(), 1, "receive {} gets the message", receives + 1);
        receives += 1;
        let response = w.automation.process(event(&got), Utc::now()).await;
        assert_eq!(response.batch_item_failures.len(), 1, "a 503 is retried");
        tokio::time::sleep(Duration::from_millis(1200)).await;
    }
    // Past maxReceiveCount the queue hands the message to its DLQ instead of the worker.
    assert!(receive(&sqs, &url, 1).await.is_empty());
    assert_eq!(receives, 2);
    assert_eq!(
        server.seen().len(),
        2,
        "each receive tried once, with the same key"
    );
    let parked = receive(&sqs, &dlq, 1).await;
    assert_eq!(parked.len(), 1, "the message is in the DLQ");
    let review = review(&env, &org).await;
    assert_eq!(
        (review.len(), review[0]["reason"].as_str()),
        (1, Some("dead_letter"))
    );

    // A malformed message is acknowledged at once and parked for review, not retried.
    let response = w
        .notify
        .process(
            event_of("bad", r#"{"type":"notification","org":"o000000000001"}"#),
            Utc::now(),
        )
        .await;
    assert!(response.batch_item_failures.is_empty());
    let operator = firmspace::review::list(&env.store, &OrgId::parse("o000000000001").unwrap(), 10)
        .await
        .unwrap();
    assert_eq!(operator[0].reason.as_deref(), Some("malformed_message"));
}

#[tokio::test]
async fn a_rule_whose_integration_is_gone_is_acknowledged_and_parked() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await.id;
    let gone = IntegrationId::generate(&org);
    send_rule(&env, &org, gone, "hi").await;
    let w = workers(&env, Duration::from_secs(1), 5);
    let response = w
        .automation
        .process(
            event_of("t9", &trigger(&org, "payment:standard:p9")),
            Utc::now(),
        )
        .await;
    assert!(response.batch_item_failures.is_empty());
    let review = review(&env, &org).await;
    assert_eq!(review[0]["reason"], "unknown_integration");
}

#[tokio::test]
async fn outside_the_local_stages_a_loopback_target_is_never_called() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await.id;
    let server = target::spawn(Duration::ZERO, 200).await;
    let hook = outbound(&env, &org, server.url(), None).await;
    send_rule(&env, &org, hook.clone(), "hi").await;
    let cloud = automation_worker::app(
        env.store.clone(),
        firmspace::effects::outbound::Outbound::new(Duration::from_secs(1), false),
        crate::support::channels::apis(false),
        5,
    );
    let response = cloud
        .process(
            event_of("t10", &trigger(&org, "payment:standard:p10")),
            Utc::now(),
        )
        .await;
    assert!(response.batch_item_failures.is_empty());
    assert!(server.seen().is_empty(), "no request left the worker");
    let review = review(&env, &org).await;
    assert_eq!(review[0]["reason"], "outbound_rejected");
}

async fn rule(env: &TestEnv, org: &OrgId, action: Action) -> automation::Rule {
    automation::create_rule(&env.store, org, Trigger::InvoicePaid, action, Utc::now())
        .await
        .unwrap()
}

#[tokio::test]
async fn one_rules_failure_does_not_stop_the_other_rules_of_the_event() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await.id;
    // Oldest first: a rule that can never run, one that must retry, then a task.
    send_rule(&env, &org, IntegrationId::generate(&org), "to nowhere").await;
    let closed = {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        outbound(&env, &org, format!("http://127.0.0.1:{port}/hook"), None).await
    };
    send_rule(&env, &org, closed, "refused connection").await;
    rule(
        &env,
        &org,
        Action::CreateTask {
            title: "Ship".into(),
        },
    )
    .await;
    let w = workers(&env, Duration::from_secs(1), 5);
    let response = w
        .automation
        .process(
            event_of("t10", &trigger(&org, "payment:standard:p10")),
            Utc::now(),
        )
        .await;
    assert_eq!(
        response.batch_item_failures.len(),
        1,
        "the refused send comes back"
    );
    assert_eq!(automation::tasks(&env.store, &org).await.unwrap().len(), 1);
    let review = review(&env, &org).await;
    assert_eq!(
        review
            .iter()
            .map(|r| r["reason"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["unknown_integration"]
    );
}

#[tokio::test]
async fn a_second_copy_of_the_trigger_neither_resends_nor_settles_a_run_still_sending() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await.id;
    let server = target::spawn(Duration::from_millis(1500), 200).await;
    let hook = outbound(&env, &org, server.url(), Some(server.status_url())).await;
    let send = send_rule(&env, &org, hook, "once").await;
    let w = workers(&env, Duration::from_secs(3), 5);
    let message = || event_of("t11", &trigger(&org, "payment:standard:p11"));
    let first = w.automation.process(message(), Utc::now());
    let second = async {
        // The second copy arrives while the first call is in flight.
        tokio::time::sleep(Duration::from_millis(300)).await;
        w.automation.process(message(), Utc::now()).await
    };
    let (first, second) = futures::join!(first, second);
    assert!(first.batch_item_failures.is_empty());
    assert_eq!(
        second.batch_item_failures.len(),
        1,
        "the busy run sends the copy back"
    );
    // The copy, delivered again after the first attempt settled, does nothing.
    let again = w.automation.process(message(), Utc::now()).await;
    assert!(again.batch_item_failures.is_empty());
    assert_eq!(server.seen().len(), 1, "one call");
    let state = run_state(&env, &org, &send, "payment:standard:p11").await;
    assert_eq!(state, Some(RunState::Sent));
    assert!(firmspace::review::list(&env.store, &org, 10)
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn a_send_starts_only_with_time_left_for_the_call_and_its_check() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await.id;
    let server = target::spawn(Duration::ZERO, 200).await;
    let hook = outbound(&env, &org, server.url(), None).await;
    let send = send_rule(&env, &org, hook, "later").await;
    let w = workers(&env, Duration::from_secs(5), 5);
    let message = || event_of("t12", &trigger(&org, "payment:standard:p12"));
    let almost_over = std::time::Instant::now() + Duration::from_secs(3);
    let response = w
        .automation
        .process_until(message(), Utc::now(), almost_over)
        .await;
    assert_eq!(response.batch_item_failures.len(), 1);
    assert!(server.seen().is_empty(), "no call that could be cut off");
    let state = run_state(&env, &org, &send, "payment:standard:p12").await;
    assert_eq!(state, None, "the run was not even claimed");
    let response = w.automation.process(message(), Utc::now()).await;
    assert!(response.batch_item_failures.is_empty());
    assert_eq!(server.seen().len(), 1);
}

#[tokio::test]
async fn a_warm_worker_opens_an_outbound_targets_secret_once() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await.id;
    let server = target::spawn(Duration::ZERO, 200).await;
    let hook = outbound(&env, &org, server.url(), None).await;
    send_rule(&env, &org, hook, "hi").await;
    let w = workers(&env, Duration::from_secs(2), 5);
    let mut loads = Vec::new();
    for event in ["payment:standard:p13", "payment:standard:p14"] {
        env.calls.clear();
        let response = w
            .automation
            .process(event_of(event, &trigger(&org, event)), Utc::now())
            .await;
        assert!(response.batch_item_failures.is_empty());
        loads.push(env.calls.take().iter().filter(|c| *c == "GetItem").count());
    }
    assert_eq!(loads, [1, 0], "the second send uses the warm target");
    assert_eq!(server.seen().len(), 2);
}
