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
use serde_json::{json, Value};
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

/// A call integration of `org`, stored: its id and its signing secret.
async fn calls_integration(o: &Ops, org: &firmspace::ids::OrgId) -> (IntegrationId, String) {
    let secret = standard::generate_secret();
    let hook = IntegrationId::generate(org);
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
    (hook, secret)
}

#[tokio::test]
async fn a_paused_integrations_consequences_wait_and_are_sent_once_when_it_resumes() {
    let o = Ops::new().await;
    let org = org_with_team(&o).await;
    let (hook, secret) = calls_integration(&o, &org).await;
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
    assert_eq!(listed["items"][0]["integration_id"], json!(hook.digest()));
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
    for url in [&q.notifications, &q.automation] {
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
    let notes = firmspace::effects::notify::list(&o.env.store, &org, "u1")
        .await
        .unwrap();
    assert_eq!(
        notes.len(),
        2,
        "the next call's notification, written at once"
    );
}

/// An operator's action under its key is done, then its record put with the answer: the same
/// key again gets that answer and does nothing (a pause sent again after a resume pauses
/// nothing), and a twin sent at the same moment does the work too and is told what it did.
#[tokio::test]
async fn an_action_again_under_its_key_does_nothing_and_a_twin_is_told_what_it_did() {
    let o = Ops::new().await;
    let org = org_with_team(&o).await;
    let (hook, _) = calls_integration(&o, &org).await;
    let (pause, resume) = (
        format!("/ops/integrations/{}/pause", hook.id),
        format!("/ops/integrations/{}/resume", hook.id),
    );
    let paused_now = || async {
        let (_, listed) = o.get(&format!("/ops/integrations?org={org}"), ADMIN).await;
        listed["items"].as_array().map_or(0, Vec::len)
    };
    let first = admin_post(&o, &pause, "k-pause").await;
    assert_eq!((first.0, first.1["changed"].as_bool()), (200, Some(true)));
    let (status, _) = admin_post(&o, &resume, "k-resume").await;
    assert_eq!((status, paused_now().await), (200, 0));
    let again = admin_post(&o, &pause, "k-pause").await;
    assert_eq!(again, first, "the stored answer");
    assert_eq!(paused_now().await, 0, "the repeat paused nothing");
    // A path's id percent-encoded is the same id, as the api reads its paths.
    let encoded = pause.replace('_', "%5F");
    assert_ne!(encoded, pause);
    let (status, paused) = admin_post(&o, &encoded, "k-encoded").await;
    assert_eq!(
        (status, paused["changed"].as_bool()),
        (200, Some(true)),
        "{paused}"
    );
    let (status, _) = admin_post(&o, &resume, "k-resume-2").await;
    assert_eq!((status, paused_now().await), (200, 0));

    let (one, two) = tokio::join!(
        admin_post(&o, &pause, "k-twin"),
        admin_post(&o, &pause, "k-twin")
    );
    let changed: Vec<bool> = [&one, &two]
        .iter()
        .map(|(status, answer)| {
            assert_eq!((*status, answer["paused"].as_bool()), (200, Some(true)));
            answer["changed"].as_bool().unwrap()
        })
        .collect();
    assert!(
        changed.contains(&true),
        "one of them paused it: {changed:?}"
    );
    assert_eq!(paused_now().await, 1);
    let later = admin_post(&o, &pause, "k-twin").await;
    assert!(
        later == one || later == two,
        "a twin's kept answer: {later:?}"
    );
}

/// An SMS integration of a new organisation (made through the api) with 10.00 USD in its
/// wallet: the key, the integration id and its secret.
async fn sms_with_wallet(o: &Ops) -> (String, String, String) {
    let (key, _) = super::org_by_key(o).await;
    let member = json!({"user_id": "u1", "name": "Olena"});
    let (status, _) = crate::support::api::call(&o.api, "POST", "/api/members", &key, member).await;
    assert_eq!(status, 201);
    let made = crate::support::api::call(
        &o.api,
        "POST",
        "/api/integrations",
        &key,
        json!({"kind": "sms", "provider": "standard"}),
    )
    .await
    .1;
    let auth = format!("Bearer {key}");
    let headers = [
        ("authorization", auth.as_str()),
        ("idempotency-key", "top-1"),
    ];
    let top_up = json!({"amount": "10.00", "currency": "USD"});
    let (status, _) =
        crate::support::api::call_with(&o.api, "POST", "/api/wallet/topups", &headers, top_up)
            .await;
    assert_eq!(status, 200);
    (
        key,
        made["integration_id"].as_str().unwrap().to_owned(),
        made["secret"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test]
async fn a_paused_sms_integration_holds_its_debits_and_decides_them_in_event_order_once() {
    let o = Ops::new().await;
    let (key, id, secret) = sms_with_wallet(&o).await;
    let hook = sms_webhook::app(o.env.store.clone());
    let deliver = |event_id: &str, body: &serde_json::Value, at: i64| {
        let raw = body.to_string();
        let signature = standard::sign(&secret, event_id, at, raw.as_bytes()).unwrap();
        crate::support::request(
            "POST",
            &format!("/hooks/{id}/sms"),
            &[
                ("content-type", "application/json"),
                ("webhook-id", event_id),
                ("webhook-timestamp", &at.to_string()),
                ("webhook-signature", &signature),
            ],
            raw.into_bytes(),
        )
    };
    let (status, _) = o
        .post(
            &format!("/ops/integrations/{id}/pause"),
            &key,
            "pause-sms",
            &json!({}),
        )
        .await;
    assert_eq!(status, 200);

    // Sent, delivered; sent, failed (its debit refunded): stored and answered, nothing moves.
    let event = crate::ledger::event;
    let t0 = Utc::now().timestamp() - 60;
    let reports = [
        ("e1", event("sent", "SM1", Some("0.05")), t0),
        ("e2", event("delivered", "SM1", None), t0 + 1),
        ("e3", event("sent", "SM2", Some("0.10")), t0 + 2),
        ("e4", event("failed", "SM2", None), t0 + 3),
        // An incoming SMS, and the carrier's re-push of it under another event id.
        ("e5", event("received", "SM3", None), t0 + 4),
        ("e6", event("received", "SM3", None), t0 + 5),
    ];
    for (event_id, body, at) in &reports {
        let res = hook.handle(deliver(event_id, body, *at)).await.unwrap();
        let answer = crate::support::json_of(&res);
        assert_eq!(res.status(), 200, "{answer}");
        assert_eq!(
            (
                &answer["held"],
                &answer["ledger_id"],
                &answer["balance"],
                &answer["duplicate"]
            ),
            (&json!(true), &json!(null), &json!("10.00"), &json!(false)),
            "{answer}"
        );
    }
    let again = hook
        .handle(deliver("e1", &reports[0].1, reports[0].2))
        .await
        .unwrap();
    let again = crate::support::json_of(&again);
    assert_eq!(
        (&again["duplicate"], &again["held"]),
        (&json!(true), &json!(true))
    );
    assert_eq!(o.env.count("ledger_line").await, 1, "the top-up only");
    let (_, summary) = o.get("/ops/summary", &key).await;
    assert_eq!(summary["events"]["sms"]["waiting"], 6, "{summary}");
    let (_, listed) = o.get("/ops/integrations", &key).await;
    let digest = listed["items"][0]["integration_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(digest.starts_with("int_") && digest != id, "{listed}");

    // Resumed by the digest the list shows: decided in event order, the wallet moves once.
    let resume = format!("/ops/integrations/{digest}/resume");
    let (status, resumed) = o.post(&resume, &key, "resume-sms", &json!({})).await;
    assert_eq!(
        (status, resumed["events"].as_u64()),
        (200, Some(6)),
        "{resumed}"
    );
    let (_, wallet) =
        crate::support::api::call(&o.api, "GET", "/api/wallet", &key, Value::Null).await;
    assert_eq!(wallet["balance"], "9.95", "{wallet}");
    assert_eq!(
        o.env.count("ledger_line").await,
        4,
        "the top-up, two debits and the failed one's refund"
    );
    let (_, inbox) =
        crate::support::api::call(&o.api, "GET", "/api/inbox", &key, Value::Null).await;
    let statuses: std::collections::BTreeMap<String, String> = inbox["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["message_id"].as_str().unwrap().into(),
                l["status"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        statuses,
        [
            ("SM1".into(), "delivered".into()),
            ("SM2".into(), "failed".into()),
            ("SM3".into(), "received".into())
        ]
        .into()
    );
    // Decided, the incoming SMS waits on its decision no more; it waits on its message's
    // consequences from when the fan-out reads the message until they happen.
    let (_, summary) = o.get("/ops/summary", &key).await;
    assert_eq!(summary["events"]["sms"]["waiting"], 0, "{summary}");
    let messages = o.env.items_of("message").await;
    assert_eq!(messages.len(), 1, "one message for the SMS and its re-push");
    let fanout = fanout::App::new(
        Publisher {
            sqs: o.sqs.clone(),
            queues: o.consequences.clone(),
        },
        o.env.store.clone(),
    );
    let out = fanout
        .process(stream_event(&messages[0], "1"), Utc::now())
        .await;
    assert!(out.batch_item_failures.is_empty());
    // Its team's notification and its line written at once, its trigger (no rule takes it)
    // handled: nothing waits.
    let (_, summary) = o.get("/ops/summary", &key).await;
    assert_eq!(summary["events"]["sms"]["waiting"], 0, "{summary}");
    let w = workers(&o.env, Duration::from_secs(2), 5);
    for _ in 0..3 {
        Box::pin(drain(&o, &w)).await;
    }
    let (_, summary) = o.get("/ops/summary", &key).await;
    assert_eq!(summary["events"]["sms"]["waiting"], 0, "{summary}");
    // A repeat after the resumption gets what was decided; nothing moves again.
    let after = hook
        .handle(deliver("e1", &reports[0].1, reports[0].2))
        .await
        .unwrap();
    let after = crate::support::json_of(&after);
    assert_eq!(after["held"], Value::Null, "{after}");
    assert!(after["ledger_id"].is_string(), "{after}");
    let by_id = format!("/ops/integrations/{id}/resume");
    let (_, again) = o.post(&by_id, &key, "resume-sms-2", &json!({})).await;
    assert_eq!(again["events"], 0, "{again}");
    assert_eq!(o.env.count("ledger_line").await, 4);
}

#[tokio::test]
async fn a_paused_monobank_integration_stays_on_the_statement_import() {
    use firmspace::integrations::bank::BankSettings;
    let o = Ops::new().await;
    let org = org_with_team(&o).await;
    let id = IntegrationId::generate(&org);
    let bank = Integration {
        id: id.clone(),
        settings: Settings::Bank(BankSettings::Monobank {
            token: "token".to_owned().into(),
            account: "0".into(),
            api_url: None,
        }),
        created_at: Utc::now(),
    };
    integrations::create(&o.env.store, &bank).await.unwrap();
    let on_import = || async {
        firmspace::bank::requests::scheduled(&o.env.store, None)
            .await
            .unwrap()
            .0
            .iter()
            .any(|(listed, _)| *listed == id)
    };
    assert!(on_import().await);
    let pause = format!("/ops/integrations/{}/pause", id.id);
    assert_eq!(admin_post(&o, &pause, "pause-bank").await.0, 200);
    assert!(on_import().await, "paused, still imported");
    let (_, listed) = o.get(&format!("/ops/integrations?org={org}"), ADMIN).await;
    assert_eq!(listed["items"][0]["integration_id"], json!(id.digest()));
    assert!(
        !listed.to_string().contains(&id.id),
        "no credential on the list"
    );
    let resume = format!("/ops/integrations/{}/resume?org={org}", id.digest());
    let (status, resumed) = admin_post(&o, &resume, "resume-bank").await;
    assert_eq!(status, 200, "{resumed}");
    assert_eq!(resumed["integration_id"], json!(id.digest()));
    assert!(on_import().await);
}

#[tokio::test]
async fn a_resumption_waits_for_a_mark_the_index_does_not_show_yet() {
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
    assert_eq!(admin_post(&o, &pause, "pause-late").await.0, 200);
    let calls = call_webhook::app(o.env.store.clone(), "https://hooks.test");
    let res = calls
        .respond(&missed(&hook, &secret, "c-late"), Utc::now())
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let item = o.env.items_of("call").await.remove(0);
    let fanout = fanout::App::new(
        Publisher {
            sqs: o.sqs.clone(),
            queues: o.consequences.clone(),
        },
        o.env.store.clone(),
    );
    assert!(fanout
        .process(stream_event(&item, "1"), Utc::now())
        .await
        .batch_item_failures
        .is_empty());
    // The mark, committed a moment ago, is not on the index yet (as an eventually consistent
    // index may show it); it appears a second later.
    let mark = o.env.items_of("held").await.remove(0);
    let pk = mark["pk"].as_s().unwrap().clone();
    let (list, position) = (
        mark["gsi1pk"].as_s().unwrap().clone(),
        mark["gsi1sk"].as_s().unwrap().clone(),
    );
    let dynamo = aws_sdk_dynamodb::Client::new(&crate::support::sdk_config().await);
    let table = o.env.store.table().to_owned();
    let key = firmspace::store::Store::key(&pk);
    dynamo
        .update_item()
        .table_name(&table)
        .set_key(Some(key.clone()))
        .update_expression("REMOVE gsi1pk, gsi1sk")
        .send()
        .await
        .unwrap();
    let later = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        dynamo
            .update_item()
            .table_name(&table)
            .set_key(Some(key))
            .update_expression("SET gsi1pk = :l, gsi1sk = :p")
            .expression_attribute_values(":l", aws_sdk_dynamodb::types::AttributeValue::S(list))
            .expression_attribute_values(":p", aws_sdk_dynamodb::types::AttributeValue::S(position))
            .send()
            .await
            .unwrap();
    });
    let resume = format!("/ops/integrations/{}/resume", hook.id);
    let (status, resumed) = admin_post(&o, &resume, "resume-late").await;
    later.await.unwrap();
    assert_eq!(
        (status, resumed["events"].as_u64(), resumed["sent"].as_u64()),
        (200, Some(1), Some(3)),
        "{resumed}"
    );
    assert!(o.env.items_of("held").await.is_empty(), "the mark is gone");
}

#[tokio::test]
async fn a_paused_integrations_payment_is_held_against_its_lookalikes_when_it_resumes() {
    use crate::support::fixtures;
    let o = Ops::new().await;
    let org = org_with_team(&o).await;
    let (hook, inv, app) = super::payment_hook(&o, &org).await;
    let pay = |id: &'static str| {
        let body = fixtures::standard_body(id, inv.id.as_str(), Some("40.00"));
        fixtures::standard_request_with_id(&hook, &body, Utc::now().timestamp(), id)
    };
    // The first 40.00, read by the fan-out; then a pause, and the same money under another id.
    assert_eq!(app.handle(pay("pay_first")).await.unwrap().status(), 200);
    let stored = |id: &'static str| {
        let o = &o;
        async move {
            o.env
                .items_of("payment_event")
                .await
                .into_iter()
                .find(|e| e.get("external_id").and_then(|v| v.as_s().ok()) == Some(&id.to_owned()))
                .unwrap()
        }
    };
    super::waiting::fanned_out(&o, &stored("pay_first").await).await;
    let pause = format!("/ops/integrations/{}/pause", hook.id);
    assert_eq!(admin_post(&o, &pause, "pause-money").await.0, 200);
    assert_eq!(app.handle(pay("pay_second")).await.unwrap().status(), 200);
    super::waiting::fanned_out(&o, &stored("pay_second").await).await;
    let reasons = |o: &Ops| {
        let store = o.env.store.clone();
        let org = org.clone();
        async move {
            firmspace::review::list(&store, &org, 10)
                .await
                .unwrap()
                .into_iter()
                .filter_map(|r| r.reason)
                .collect::<Vec<_>>()
        }
    };
    assert!(reasons(&o).await.is_empty(), "held: not yet checked");
    // Resumed: its records and its lookalike check are sent on, and the check finds the first.
    let resume = format!("/ops/integrations/{}/resume", hook.id);
    assert_eq!(admin_post(&o, &resume, "resume-money").await.0, 200);
    let w = workers(&o.env, Duration::from_secs(2), 5);
    for _ in 0..3 {
        Box::pin(drain(&o, &w)).await;
    }
    assert_eq!(reasons(&o).await, ["possible_same_money"]);
    let (_, summary) = o.get(&format!("/ops/summary?org={org}"), ADMIN).await;
    assert_eq!(summary["events"]["payment"]["waiting"], 0, "{summary}");
}
