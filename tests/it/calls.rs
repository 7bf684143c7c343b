//! Calls in-process against ministack: the call webhook (Twilio-signed and generic) and the
//! softphone's `POST /api/calls`, each call stored once however often and however concurrently
//! it is posted, its peer linked to one contact, and its consequences once.

use crate::consequences::{fanout_app, stream_event, workers};
use crate::support::app::{deliver_at, post, Crm};
use crate::support::fixtures;
use crate::support::queues::{event, receive};
use chrono::Utc;
use firmspace::calls::providers::{webhook_url, CallSettings};
use firmspace::effects::automation::{self, Action};
use firmspace::effects::Trigger;
use firmspace::ids::IntegrationId;
use firmspace::integrations::Settings;
use firmspace::signature::{standard, twilio};
use serde_json::{json, Value};
use std::time::Duration;

const PUBLIC_URL: &str = "https://api.test";
const AUTH_TOKEN: &str = "twilio-auth-token-0001";

async fn calls_integration(crm: &Crm, settings: CallSettings) -> IntegrationId {
    fixtures::any_integration(&crm.env, &crm.org, Settings::Calls(settings)).await
}

/// A fresh organisation with a Twilio calls integration, and the call webhook.
async fn twilio_setup() -> (Crm, IntegrationId, call_webhook::App) {
    let crm = Crm::new().await;
    let twilio = CallSettings::Twilio {
        auth_token: AUTH_TOKEN.to_owned().into(),
    };
    let hook = calls_integration(&crm, twilio).await;
    let app = call_webhook::app(crm.store().clone(), PUBLIC_URL);
    (crm, hook, app)
}

fn twilio_request(id: &IntegrationId, form: &str) -> lambda_http::Request {
    let signature = twilio::sign(AUTH_TOKEN, &webhook_url(PUBLIC_URL, id), form.as_bytes());
    let headers = [
        ("content-type", "application/x-www-form-urlencoded"),
        ("x-twilio-signature", signature.as_str()),
    ];
    post(&format!("/hooks/{}/calls", id.id), &headers, form)
}

async fn answer(app: &call_webhook::App, req: lambda_http::Request) -> (u16, Value) {
    deliver_at(app, &req, Utc::now()).await
}

#[tokio::test]
async fn a_twilio_callback_is_verified_over_the_public_url_and_only_a_final_status_is_a_call() {
    let (crm, hook, app) = twilio_setup().await;
    let form = |status: &str| {
        format!("CallSid=CA9&Direction=inbound&From=%2B380441234567&To=%2B380443334455&CallStatus={status}&CallDuration=0")
    };
    let (status, ignored) = answer(&app, twilio_request(&hook, &form("ringing"))).await;
    assert_eq!((status, ignored["status"].as_str()), (200, Some("ignored")));
    assert_eq!(crm.count("call").await, 0);

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
    assert_eq!(crm.count("call").await, 1);
    assert_eq!(
        crm.count("contact").await,
        1,
        "the unknown number became one lead"
    );
}

/// Twenty deliveries of one busy call, each under its own webhook-id, all at once: their answers.
async fn twenty_deliveries(
    app: &call_webhook::App,
    hook: &IntegrationId,
    secret: &str,
) -> Vec<(u16, Value)> {
    let body = busy_call("c-20");
    let deliveries = (0..20).map(|i| {
        let req = signed(hook, secret, &format!("msg_{i}"), &body);
        async move { answer(app, req).await }
    });
    futures::future::join_all(deliveries).await
}

/// A generic sender's busy inbound call `call_id` from +380 44 123 45 67.
fn busy_call(call_id: &str) -> String {
    json!({"type": "call.completed", "data": {"call_id": call_id, "direction": "inbound",
        "peer": "+380 44 123 45 67", "status": "busy", "duration": 0}})
    .to_string()
}

/// `body` posted to `hook`'s call webhook, signed now under `webhook_id`.
fn signed(
    hook: &IntegrationId,
    secret: &str,
    webhook_id: &str,
    body: &str,
) -> lambda_http::Request {
    let now = Utc::now().timestamp();
    fixtures::signed_post(hook, "calls", secret, webhook_id, now, body)
}

#[tokio::test]
async fn a_generic_senders_call_ids_are_its_own_and_lookalike_calls_are_two() {
    let crm = Crm::new().await;
    let app = call_webhook::app(crm.store().clone(), PUBLIC_URL);
    let mut senders = Vec::new();
    for _ in 0..2 {
        let secret = standard::generate_secret();
        let settings = CallSettings::Standard {
            secret: secret.clone().into(),
        };
        senders.push((calls_integration(&crm, settings).await, secret));
    }
    // The same call id from two senders: two calls, each keyed within its integration.
    let mut keys = Vec::new();
    for (hook, secret) in &senders {
        let (status, first) = answer(&app, signed(hook, secret, "w1", &busy_call("c-1"))).await;
        assert_eq!(status, 201, "{first}");
        keys.push(first["call"]["key"].as_str().unwrap().to_owned());
        let (status, again) = answer(&app, signed(hook, secret, "w2", &busy_call("c-1"))).await;
        assert_eq!((status, again["duplicate"].as_bool()), (200, Some(true)));
    }
    assert_eq!(keys[0], format!("call:{}:c-1:inbound", senders[0].0.id));
    assert_ne!(keys[0], keys[1]);
    // Another id, the same peer, status, duration and moment: another call, not a lookalike merged.
    let (hook, secret) = &senders[0];
    let (status, _) = answer(&app, signed(hook, secret, "w3", &busy_call("c-2"))).await;
    assert_eq!(status, 201);
    assert_eq!(
        (crm.count("call").await, crm.count("contact").await),
        (3, 1)
    );
}

#[tokio::test]
async fn a_call_posted_twenty_times_at_once_is_one_call_one_lead_and_one_missed_call_task() {
    let crm = Crm::new().await;
    let secret = standard::generate_secret();
    let settings = CallSettings::Standard {
        secret: secret.clone().into(),
    };
    let hook = calls_integration(&crm, settings).await;
    let task = Action::CreateTask {
        title: "Call back".into(),
    };
    automation::create_rule(crm.store(), &crm.org, Trigger::CallMissed, task, Utc::now())
        .await
        .unwrap();
    let app = call_webhook::app(crm.store().clone(), PUBLIC_URL);
    let answers = twenty_deliveries(&app, &hook, &secret).await;
    let mut statuses: Vec<u16> = answers.iter().map(|(s, _)| *s).collect();
    statuses.sort();
    assert_eq!(statuses, [vec![200; 19], vec![201]].concat(), "{answers:?}");
    assert!(answers
        .iter()
        .all(|(_, a)| a["call"]["peer"] == "+380441234567"));
    assert_eq!(
        (
            crm.count("call").await,
            crm.count("contact").await,
            crm.count("identity").await
        ),
        (1, 1, 1)
    );
    its_consequences_are_one_missed_call_task(&crm, &hook).await;
}

/// The stored call through the fan-out and the workers, twice: one missed-call task.
async fn its_consequences_are_one_missed_call_task(crm: &Crm, hook: &IntegrationId) {
    let item = crm
        .table_snapshot()
        .await
        .into_iter()
        .find(|i| {
            i.get("kind")
                .and_then(|k| k.as_s().ok())
                .is_some_and(|k| k == "call")
        })
        .unwrap();
    let (sqs, q, fanout) = fanout_app(&crm.env).await;
    let fanned = fanout.process(stream_event(&item, "1"), Utc::now()).await;
    assert!(fanned.batch_item_failures.is_empty());
    let (told, triggers) = (
        receive(&sqs, &q.notifications, 1).await,
        receive(&sqs, &q.automation, 1).await,
    );
    // What tells people (its activity line, its team's notification) the fan-out wrote; one
    // message runs the rules.
    assert_eq!((told.len(), triggers.len()), (0, 1));
    let w = workers(&crm.env, Duration::from_secs(2), 5);
    for _ in 0..2 {
        let done = w.automation.process(event(&triggers), Utc::now()).await;
        assert!(done.batch_item_failures.is_empty());
    }
    let tasks = automation::tasks(crm.store(), &crm.org).await.unwrap();
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0].event_key, format!("call:{}:c-20:inbound", hook.id));
}

/// Olena, a member who owns the contact Olena; her contact's JSON.
async fn olena(crm: &Crm) -> Value {
    let contact = json!({"name": "Olena", "phone": "+380441234567", "owner": "u1"});
    let stranger = crm
        .expect_status("POST", "/api/contacts", contact.clone(), 400)
        .await;
    assert_eq!(
        stranger["field"].as_str(),
        Some("owner"),
        "u1 is no member yet"
    );
    let member = json!({"user_id": "u1", "name": "Olena"});
    crm.call("POST", "/api/members", member).await;
    let created = crm
        .expect_status("POST", "/api/contacts", contact, 201)
        .await;
    let twin = json!({"name": "Twin", "phone": "+380 44 123 45 67"});
    crm.expect_error("POST", "/api/contacts", twin, 409, "phone_in_use")
        .await;
    created
}

#[tokio::test]
async fn the_softphone_posts_a_call_once_and_a_known_number_finds_its_contact() {
    let crm = Crm::new().await;
    let contact = olena(&crm).await;
    let softphone = json!({"call_id": "sp-1", "direction": "outbound", "peer": "+380441234567", "status": "completed", "duration": 42});
    let first = crm
        .expect_status("POST", "/api/calls", softphone.clone(), 201)
        .await;
    assert_eq!(first["call"]["contact_id"], contact["contact_id"]);
    let (status, again) = crm.call("POST", "/api/calls", softphone.clone()).await;
    assert_eq!((status, again["duplicate"].as_bool()), (200, Some(true)));
    // The same key with another duration keeps the first and asks a person.
    let mut other = softphone.clone();
    other["duration"] = json!(7);
    let (status, kept) = crm.call("POST", "/api/calls", other).await;
    assert_eq!((status, kept["call"]["duration"].as_u64()), (200, Some(42)));
    let (_, review) = crm.call("GET", "/api/review", Value::Null).await;
    assert_eq!(review["items"][0]["reason"], "payload_mismatch");
    let (_, listed) = crm.call("GET", "/api/calls", Value::Null).await;
    assert_eq!(listed["items"].as_array().unwrap().len(), 1);
    let (_, contacts) = crm.call("GET", "/api/contacts", Value::Null).await;
    assert_eq!(
        contacts["items"].as_array().unwrap().len(),
        1,
        "no lead for a known number"
    );
}

#[tokio::test]
async fn the_softphone_gets_a_bad_call_named_and_a_ringing_one_ignored() {
    let crm = Crm::new().await;
    for bad in [
        json!({"call_id": "x", "direction": "up", "peer": "+380441234567", "status": "completed"}),
        json!({"call_id": "x", "direction": "inbound", "peer": "0441234567", "status": "completed"}),
        json!({"call_id": "x#y", "direction": "inbound", "peer": "+380441234567", "status": "completed"}),
        json!({"call_id": "x", "direction": "inbound", "peer": "+380441234567", "status": "completed", "duration": 90000}),
    ] {
        let (status, refused) = crm.call("POST", "/api/calls", bad.clone()).await;
        assert_eq!(
            (status, refused["error"].as_str()),
            (400, Some("invalid_field")),
            "{bad}"
        );
    }
    let ringing = json!({"call_id": "r1", "direction": "inbound", "peer": "+380441234567", "status": "ringing"});
    let (status, ignored) = crm.call("POST", "/api/calls", ringing).await;
    assert_eq!((status, ignored["status"].as_str()), (200, Some("ignored")));
}

#[tokio::test]
async fn a_first_call_takes_two_dynamodb_calls_and_a_repeat_one() {
    let crm = Crm::new().await;
    let body = json!({"call_id": "rt-1", "direction": "inbound", "peer": "+380441234567", "status": "completed", "duration": 5});
    let mut counted = Vec::new();
    for _ in 0..2 {
        // Authentication reads the API key first (one GetItem) and counts the key's write of the
        // minute (one UpdateItem, before the work); then the call's own calls.
        crm.env.calls.clear();
        crm.call("POST", "/api/calls", body.clone()).await;
        counted.push(crm.env.calls.take());
    }
    // This function's first stored event also writes what it spent (the organisation's and the
    // deployment's figures: two `UpdateItem`s, at most once per 10 s; `store::spent`).
    assert_eq!(
        counted[0],
        [
            "GetItem",
            "UpdateItem",
            "BatchGetItem",
            "TransactWriteItems",
            "UpdateItem",
            "UpdateItem"
        ],
        "new number: call, lead and identity in one transaction"
    );
    assert_eq!(
        counted[1],
        ["GetItem", "UpdateItem", "BatchGetItem"],
        "a repeat is one read"
    );
}

/// What a request spent is written only after one that stored an event (`store::spent`, at
/// most once per 10 s): a call that has not ended stores nothing and writes no figures; the
/// first call stored does.
#[tokio::test]
async fn a_call_not_stored_writes_no_figures_of_what_it_spent_and_the_first_stored_one_does() {
    let crm = Crm::new().await;
    let ringing = json!({"call_id": "sp-1", "direction": "inbound", "peer": "+380441234567", "status": "ringing"});
    crm.env.calls.clear();
    let (status, _) = crm.call("POST", "/api/calls", ringing).await;
    assert_eq!(status, 200);
    let ignored = crm.env.calls.take();
    assert_eq!(
        ignored,
        ["GetItem", "UpdateItem"],
        "the key's read and its minute"
    );
    let ended = json!({"call_id": "sp-1", "direction": "inbound", "peer": "+380441234567", "status": "completed", "duration": 5});
    let (status, _) = crm.call("POST", "/api/calls", ended).await;
    assert_eq!(status, 201);
    let stored = crm.env.calls.take();
    assert_eq!(
        stored[stored.len() - 2..],
        ["UpdateItem", "UpdateItem"],
        "the figures written after the first stored call: {stored:?}"
    );
}

#[tokio::test]
async fn hostile_call_deliveries_are_refused_and_write_nothing() {
    let (crm, hook, app) = twilio_setup().await;
    let before = crm.table_snapshot().await;
    let form =
        "CallSid=CAh&Direction=inbound&From=%2B380441234567&To=%2B380443334455&CallStatus=busy";
    let path = format!("/hooks/{}/calls", hook.id);
    let signed = twilio_request(&hook, form);
    let signature = signed.headers()["x-twilio-signature"].to_str().unwrap();
    let signed_by = [("x-twilio-signature", signature)];
    let cases = [
        ("no signature", post(&path, &[], form)),
        (
            "not base64",
            post(&path, &[("x-twilio-signature", "%%%")], form),
        ),
        ("another body", post(&path, &signed_by, "CallSid=CAh")),
        ("300 KiB", post(&path, &signed_by, vec![b'a'; 300 * 1024])),
        (
            "GET",
            crate::support::request("GET", &path, &[], Vec::new()),
        ),
        (
            "unknown integration",
            post(
                "/hooks/o0123456789ab_0123456789abcdef/calls",
                &signed_by,
                form,
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
        crm.table_snapshot().await,
        before,
        "a refused delivery wrote nothing"
    );
}

#[tokio::test]
async fn contacts_and_calls_are_listed_a_page_at_a_time_to_the_last() {
    let crm = Crm::new().await;
    for i in 0..3 {
        let contact = json!({"name": format!("Contact {i}")});
        crm.expect_status("POST", "/api/contacts", contact, 201)
            .await;
        let call = json!({"call_id": format!("page-{i}"), "direction": "inbound",
            "peer": format!("+38044123456{i}"), "status": "completed", "duration": 5});
        crm.expect_status("POST", "/api/calls", call, 201).await;
    }
    for (path, count) in [("/api/contacts", 6), ("/api/calls", 3)] {
        // Three made by hand, three leads of the calls' numbers; three calls.
        let (_, first) = crm
            .call("GET", &format!("{path}?limit=2"), Value::Null)
            .await;
        assert_eq!(first["items"].as_array().unwrap().len(), 2, "{first}");
        let mut seen = 2;
        let mut cursor = first["cursor"].as_str().map(str::to_owned);
        while let Some(at) = cursor {
            // A cursor is URL-safe as it is given.
            let next = format!("{path}?limit=2&cursor={at}");
            let (status, page) = crm.call("GET", &next, Value::Null).await;
            assert_eq!(status, 200, "{page}");
            seen += page["items"].as_array().unwrap().len();
            cursor = page["cursor"].as_str().map(str::to_owned);
        }
        assert_eq!(seen, count, "{path}: every one reached");
        let (status, bad) = crm
            .call("GET", &format!("{path}?cursor=nope"), Value::Null)
            .await;
        assert_eq!(
            (status, bad["error"].as_str()),
            (400, Some("invalid_cursor"))
        );
    }
}
