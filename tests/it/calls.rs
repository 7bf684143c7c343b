//! Calls in-process against ministack: the call webhook (Twilio-signed and generic) and the
//! softphone's `POST /api/calls`, each call stored once however often and however concurrently
//! it is posted, its peer linked to one contact, and its consequences once.

use crate::consequences::{fanout_app, stream_event, workers};
use crate::support::api::{self, call, call_with};
use crate::support::queues::{event, receive};
use crate::support::{fixtures, json_of, request, TestEnv};
use chrono::Utc;
use firmspace::calls::providers::{webhook_url, CallSettings};
use firmspace::effects::automation::{self, Action};
use firmspace::effects::Trigger;
use firmspace::ids::{IntegrationId, OrgId};
use firmspace::integrations::{self, Integration, Settings};
use firmspace::signature::{standard, twilio};
use serde_json::{json, Value};
use std::time::Duration;

const PUBLIC_URL: &str = "https://api.test";
const AUTH_TOKEN: &str = "twilio-auth-token-0001";

async fn calls_integration(env: &TestEnv, org: &OrgId, settings: CallSettings) -> IntegrationId {
    let id = IntegrationId::generate(org);
    integrations::create(
        &env.store,
        &Integration {
            id: id.clone(),
            settings: Settings::Calls(settings),
            created_at: Utc::now(),
        },
    )
    .await
    .unwrap();
    id
}

/// A fresh table, an organisation with a Twilio calls integration, and the call webhook.
async fn twilio_setup() -> (TestEnv, IntegrationId, call_webhook::App) {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await.id;
    let hook = calls_integration(
        &env,
        &org,
        CallSettings::Twilio {
            auth_token: AUTH_TOKEN.to_owned().into(),
        },
    )
    .await;
    let app = call_webhook::app(env.store.clone(), PUBLIC_URL);
    (env, hook, app)
}

fn twilio_request(id: &IntegrationId, form: &str) -> lambda_http::Request {
    let signature = twilio::sign(AUTH_TOKEN, &webhook_url(PUBLIC_URL, id), form.as_bytes());
    request(
        "POST",
        &format!("/hooks/{}/calls", id.id),
        &[
            ("content-type", "application/x-www-form-urlencoded"),
            ("x-twilio-signature", &signature),
        ],
        form.as_bytes().to_vec(),
    )
}

async fn answer(app: &call_webhook::App, req: lambda_http::Request) -> (u16, Value) {
    let res = app
        .respond(&req, Utc::now())
        .await
        .unwrap_or_else(firmspace::http::ApiError::into_response);
    (res.status().as_u16(), json_of(&res))
}

#[tokio::test]
async fn a_twilio_callback_is_verified_over_the_public_url_and_only_a_final_status_is_a_call() {
    let (env, hook, app) = twilio_setup().await;
    let form = |status: &str| {
        format!("CallSid=CA9&Direction=inbound&From=%2B380441234567&To=%2B380443334455&CallStatus={status}&CallDuration=0")
    };
    let (status, ignored) = answer(&app, twilio_request(&hook, &form("ringing"))).await;
    assert_eq!((status, ignored["status"].as_str()), (200, Some("ignored")));
    assert_eq!(env.count("call").await, 0);

    let (status, first) = answer(&app, twilio_request(&hook, &form("no-answer"))).await;
    assert_eq!(status, 201, "{first}");
    assert_eq!(first["call"]["key"], "call:CA9:inbound");
    assert_eq!(
        (
            first["call"]["missed"].as_bool(),
            first["duplicate"].as_bool()
        ),
        (Some(true), Some(false))
    );
    let (status, again) = answer(&app, twilio_request(&hook, &form("no-answer"))).await;
    assert_eq!((status, again["duplicate"].as_bool()), (200, Some(true)));
    assert_eq!(again["call"], first["call"]);

    // Signed for another URL, or tampered with: refused before anything is read.
    let mut elsewhere = twilio_request(&hook, &form("completed"));
    let wrong = twilio::sign(
        AUTH_TOKEN,
        "https://elsewhere.test/hooks/x/calls",
        form("completed").as_bytes(),
    );
    elsewhere
        .headers_mut()
        .insert("x-twilio-signature", wrong.parse().unwrap());
    assert_eq!(answer(&app, elsewhere).await.0, 401);
    assert_eq!(env.count("call").await, 1);
    assert_eq!(
        env.count("contact").await,
        1,
        "the unknown number became one lead"
    );
}

#[tokio::test]
async fn a_call_posted_twenty_times_at_once_is_one_call_one_lead_and_one_missed_call_task() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await.id;
    let secret = standard::generate_secret();
    let hook = calls_integration(
        &env,
        &org,
        CallSettings::Standard {
            secret: secret.clone().into(),
        },
    )
    .await;
    automation::create_rule(
        &env.store,
        &org,
        Trigger::CallMissed,
        Action::CreateTask {
            title: "Call back".into(),
        },
        Utc::now(),
    )
    .await
    .unwrap();
    let app = call_webhook::app(env.store.clone(), PUBLIC_URL);
    let body = json!({"type": "call.completed", "data": {"call_id": "c-20", "direction": "inbound",
        "peer": "+380 44 123 45 67", "status": "busy", "duration": 0}})
    .to_string();
    let now = Utc::now().timestamp();
    let deliveries = (0..20).map(|i| {
        let id = format!("msg_{i}");
        let signature = standard::sign(&secret, &id, now, body.as_bytes()).unwrap();
        let req = request(
            "POST",
            &format!("/hooks/{}/calls", hook.id),
            &[
                ("webhook-id", &id),
                ("webhook-timestamp", &now.to_string()),
                ("webhook-signature", &signature),
            ],
            body.as_bytes().to_vec(),
        );
        let app = &app;
        async move { answer(app, req).await }
    });
    let answers = futures::future::join_all(deliveries).await;
    let mut statuses: Vec<u16> = answers.iter().map(|(s, _)| *s).collect();
    statuses.sort();
    assert_eq!(statuses, [vec![200; 19], vec![201]].concat(), "{answers:?}");
    assert!(answers
        .iter()
        .all(|(_, a)| a["call"]["peer"] == "+380441234567"));
    assert_eq!(
        (
            env.count("call").await,
            env.count("contact").await,
            env.count("identity").await
        ),
        (1, 1, 1)
    );

    // Its consequences, through the fan-out and the workers: one missed-call task.
    let item = env
        .items()
        .await
        .into_iter()
        .find(|i| {
            i.get("kind")
                .and_then(|k| k.as_s().ok())
                .is_some_and(|k| k == "call")
        })
        .unwrap();
    let (sqs, q, fanout) = fanout_app(&env).await;
    assert!(fanout
        .process(stream_event(&item, "1"), Utc::now())
        .await
        .batch_item_failures
        .is_empty());
    let (lines, triggers) = (
        receive(&sqs, &q.activity, 1).await,
        receive(&sqs, &q.automation, 1).await,
    );
    assert_eq!((lines.len(), triggers.len()), (1, 1));
    let w = workers(&env, Duration::from_secs(2), 5);
    for _ in 0..2 {
        assert!(w
            .automation
            .process(event(&triggers), Utc::now())
            .await
            .batch_item_failures
            .is_empty());
    }
    let tasks = automation::tasks(&env.store, &org).await.unwrap();
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0]["event_key"], "call:c-20:inbound");
}

#[tokio::test]
async fn the_softphone_posts_a_call_once_and_a_known_number_finds_its_contact() {
    let env = TestEnv::new().await;
    let app = api::app(&env);
    let key = api::new_org(&app).await;
    let (status, stranger) = call(
        &app,
        "POST",
        "/api/contacts",
        &key,
        json!({"name": "Olena", "phone": "+380441234567", "owner": "u1"}),
    )
    .await;
    assert_eq!(
        (status, stranger["field"].as_str()),
        (400, Some("owner")),
        "u1 is no member yet"
    );
    call(
        &app,
        "POST",
        "/api/members",
        &key,
        json!({"user_id": "u1", "name": "Olena"}),
    )
    .await;
    let (status, contact) = call(
        &app,
        "POST",
        "/api/contacts",
        &key,
        json!({"name": "Olena", "phone": "+380441234567", "owner": "u1"}),
    )
    .await;
    assert_eq!(status, 201, "{contact}");
    let (status, taken) = call(
        &app,
        "POST",
        "/api/contacts",
        &key,
        json!({"name": "Twin", "phone": "+380 44 123 45 67"}),
    )
    .await;
    assert_eq!(
        (status, taken["error"].as_str()),
        (409, Some("phone_in_use"))
    );

    let softphone = json!({"call_id": "sp-1", "direction": "outbound", "peer": "+380441234567", "status": "completed", "duration": 42});
    let (status, first) = call(&app, "POST", "/api/calls", &key, softphone.clone()).await;
    assert_eq!(status, 201, "{first}");
    assert_eq!(first["call"]["contact_id"], contact["contact_id"]);
    let (status, again) = call(&app, "POST", "/api/calls", &key, softphone.clone()).await;
    assert_eq!((status, again["duplicate"].as_bool()), (200, Some(true)));
    // The same key with another duration keeps the first and asks a person.
    let mut other = softphone.clone();
    other["duration"] = json!(7);
    let (status, kept) = call(&app, "POST", "/api/calls", &key, other).await;
    assert_eq!((status, kept["call"]["duration"].as_u64()), (200, Some(42)));
    let (_, review) = call(&app, "GET", "/api/review", &key, Value::Null).await;
    assert_eq!(review["items"][0]["reason"], "payload_mismatch");

    let (_, listed) = call(&app, "GET", "/api/calls", &key, Value::Null).await;
    assert_eq!(listed["items"].as_array().unwrap().len(), 1);
    let (_, contacts) = call(&app, "GET", "/api/contacts", &key, Value::Null).await;
    assert_eq!(
        contacts["items"].as_array().unwrap().len(),
        1,
        "no lead for a known number"
    );

    for bad in [
        json!({"call_id": "x", "direction": "up", "peer": "+380441234567", "status": "completed"}),
        json!({"call_id": "x", "direction": "inbound", "peer": "0441234567", "status": "completed"}),
        json!({"call_id": "x#y", "direction": "inbound", "peer": "+380441234567", "status": "completed"}),
        json!({"call_id": "x", "direction": "inbound", "peer": "+380441234567", "status": "completed", "duration": 90000}),
    ] {
        let (status, refused) = call(&app, "POST", "/api/calls", &key, bad.clone()).await;
        assert_eq!(
            (status, refused["error"].as_str()),
            (400, Some("invalid_field")),
            "{bad}"
        );
    }
    let (status, ignored) = call_with(&app, "POST", "/api/calls", &[("authorization", &format!("Bearer {key}"))],
        json!({"call_id": "r1", "direction": "inbound", "peer": "+380441234567", "status": "ringing"})).await;
    assert_eq!((status, ignored["status"].as_str()), (200, Some("ignored")));
}

#[tokio::test]
async fn a_first_call_takes_two_dynamodb_calls_and_a_repeat_one() {
    let env = TestEnv::new().await;
    let app = api::app(&env);
    let key = api::new_org(&app).await;
    let body = json!({"call_id": "rt-1", "direction": "inbound", "peer": "+380441234567", "status": "completed", "duration": 5});
    let mut counted = Vec::new();
    for _ in 0..2 {
        // Authentication reads the API key first: one GetItem, then the call's own calls.
        env.calls.clear();
        call(&app, "POST", "/api/calls", &key, body.clone()).await;
        counted.push(env.calls.take());
    }
    assert_eq!(
        counted[0],
        ["GetItem", "BatchGetItem", "TransactWriteItems"],
        "new number: call, lead and identity in one transaction"
    );
    assert_eq!(
        counted[1],
        ["GetItem", "BatchGetItem"],
        "a repeat is one read"
    );
}

#[tokio::test]
async fn hostile_call_deliveries_are_refused_and_write_nothing() {
    let (env, hook, app) = twilio_setup().await;
    let before = env.items().await.len();
    let form =
        "CallSid=CAh&Direction=inbound&From=%2B380441234567&To=%2B380443334455&CallStatus=busy";
    let path = format!("/hooks/{}/calls", hook.id);
    let signed = twilio_request(&hook, form);
    let signature = signed.headers()["x-twilio-signature"]
        .to_str()
        .unwrap()
        .to_owned();
    let cases = [
        (
            "no signature",
            request("POST", &path, &[], form.as_bytes().to_vec()),
        ),
        (
            "not base64",
            request(
                "POST",
                &path,
                &[("x-twilio-signature", "%%%")],
                form.as_bytes().to_vec(),
            ),
        ),
        (
            "another body",
            request(
                "POST",
                &path,
                &[("x-twilio-signature", &signature)],
                b"CallSid=CAh".to_vec(),
            ),
        ),
        (
            "300 KiB",
            request(
                "POST",
                &path,
                &[("x-twilio-signature", &signature)],
                vec![b'a'; 300 * 1024],
            ),
        ),
        ("GET", request("GET", &path, &[], Vec::new())),
        (
            "unknown integration",
            request(
                "POST",
                "/hooks/o0123456789ab_0123456789abcdef/calls",
                &[("x-twilio-signature", &signature)],
                form.as_bytes().to_vec(),
            ),
        ),
    ];
    for (case, req) in cases {
        let (status, body) = answer(&app, req).await;
        assert!((400..500).contains(&status), "{case}: {status} {body}");
        assert!(
            body["error"].is_string() && body["detail"].is_string(),
            "{case}: {body}"
        );
    }
    assert_eq!(
        env.items().await.len(),
        before,
        "a refused delivery wrote nothing"
    );
}
