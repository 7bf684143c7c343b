//! Recovering what Stripe sent while we were down: its events list asked with the integration's
//! API key (set later through the secrets route, the signing secret kept), each event booked
//! through the webhook's own path and key: what arrived is a duplicate, a type the webhook does
//! not book is ignored, the rest is booked once.

use super::{org_by_key, Ops};
use crate::support::api::{call, call_with};
use crate::support::fixtures::{self, stripe_request, NOW, STRIPE_SECRET};
use crate::support::target::spawn_stripe;
use firmspace::ids::IntegrationId;
use firmspace::ops::recover::Recovery;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

const KEY: &str = "rk_test_recovery_0001";

/// A unix time as the API takes it.
fn at(unix: i64) -> String {
    firmspace::time::format(firmspace::time::from_unix(unix).unwrap())
}

/// A Stripe event `evt` of `kind` created at `created`, paying `cents` of `invoice_id`.
fn event(evt: &str, kind: &str, created: i64, cents: u32, invoice_id: &str) -> Value {
    json!({"id": evt, "object": "event", "type": kind, "created": created,
        "data": {"object": {"id": format!("pi_{evt}"), "amount_received": cents, "currency": "uah",
                            "metadata": {"invoice_id": invoice_id}}}})
}

/// The import function over the same table, in this process.
fn importer(o: &Ops) -> bank_import::App {
    bank_import::App::new(
        o.env.store.clone(),
        crate::support::channels::apis(true),
        firmspace::bank::import::Limits {
            interval: Duration::from_millis(400),
            max_wait: Duration::from_secs(1),
            max_pages: 1,
        },
        firmspace::bank::import::Requests {
            sqs: o.sqs.clone(),
            queue_url: o.consequences.automation.clone(),
            files_queue_url: o.consequences.automation.clone(),
        },
        None,
    )
}

/// The ops function handing recoveries to the import function in this process.
fn with_recovery(o: Ops) -> Ops {
    let importer = Arc::new(importer(&o));
    let recovery = Recovery::Local(Box::new(move |event: Value| {
        let importer = importer.clone();
        Box::pin(async move { importer.process(&event).await.unwrap_or(Value::Null) })
    }));
    Ops {
        app: o.app.with_recovery(recovery),
        ..o
    }
}

#[tokio::test]
async fn what_stripe_sent_while_we_were_down_is_booked_once_through_the_webhooks_path() {
    let o = with_recovery(Ops::new().await);
    let (key, org) = org_by_key(&o).await;
    let invoice = fixtures::invoice(&o.env, &org, rust_decimal_macros::dec!(100), "UAH").await;
    let inv = invoice.id.as_str();
    let hour = 3600;
    let stripe = spawn_stripe(
        KEY,
        vec![
            event("evt_1", "payment_intent.succeeded", NOW - hour, 1000, inv),
            event(
                "evt_2",
                "payment_intent.succeeded",
                NOW - 2 * hour,
                2000,
                inv,
            ),
            event(
                "evt_3",
                "payment_intent.succeeded",
                NOW - 3 * hour,
                3000,
                inv,
            ),
            event(
                "evt_4",
                "payment_intent.payment_failed",
                NOW - 4 * hour,
                500,
                inv,
            ),
            event(
                "evt_5",
                "payment_intent.succeeded",
                NOW - 30 * hour,
                4000,
                inv,
            ),
        ],
    )
    .await;
    let made = json!({"kind": "payments", "provider": "stripe", "secret": STRIPE_SECRET,
        "api_url": stripe.url()});
    let (status, created) = call(&o.api, "POST", "/api/integrations", &key, made).await;
    assert_eq!(status, 201, "{created}");
    let id = IntegrationId::parse(created["integration_id"].as_str().unwrap()).unwrap();
    let recover = format!("/ops/integrations/{id}/recover");
    let window = json!({"from": at(NOW - 24 * hour), "to": at(NOW)});

    // Without an API key there is nothing to ask Stripe with.
    let (status, refused) = o.post(&recover, &key, "recover-0", &window).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (409, Some("no_api_key")),
        "{refused}"
    );
    // The signing secret rotated (the previous one verifies a day more), then the key set on
    // its own: the signing secrets are kept, and a delivery signed with the previous verifies.
    let auth = format!("Bearer {key}");
    let rotate = [
        ("authorization", auth.as_str()),
        ("idempotency-key", "rotate"),
    ];
    let secrets = format!("/api/integrations/{id}/secrets");
    let new_secret = json!({"secrets": {"secret": "whsec_stripe_test_secret_0002"}});
    assert_eq!(
        call_with(&o.api, "POST", &secrets, &rotate, new_secret)
            .await
            .0,
        200
    );
    let headers = [
        ("authorization", auth.as_str()),
        ("idempotency-key", "set-key"),
    ];
    let path = format!("/api/integrations/{id}/secrets");
    let (status, set) = call_with(
        &o.api,
        "POST",
        &path,
        &headers,
        json!({"secrets": {"api_key": KEY}}),
    )
    .await;
    assert_eq!(
        (status, &set["secrets"]["names"]),
        (200, &json!(["api_key", "secret"])),
        "{set}"
    );
    let bad = [
        ("authorization", auth.as_str()),
        ("idempotency-key", "bad-key"),
    ];
    let (status, _) = call_with(
        &o.api,
        "POST",
        &path,
        &bad,
        json!({"secrets": {"api_key": "pk_live_x"}}),
    )
    .await;
    assert_eq!(status, 400, "a publishable key reads nothing");

    // evt_1 arrived before the outage, through the webhook.
    let webhook = payment_webhook::app(o.env.store.clone());
    let body = json!({"id": "evt_1", "type": "payment_intent.succeeded", "created": NOW - hour,
        "data": {"object": {"id": "pi_evt_1", "amount_received": 1000, "currency": "uah",
                            "metadata": {"invoice_id": inv}}}})
    .to_string();
    let delivered = webhook
        .handle(stripe_request(&id, &body, chrono::Utc::now().timestamp()))
        .await
        .unwrap();
    assert_eq!(delivered.status(), 200);

    let (status, recovered) = o.post(&recover, &key, "recover-1", &window).await;
    assert_eq!(status, 200, "{recovered}");
    assert_eq!(
        (
            &recovered["asked"],
            &recovered["new"],
            &recovered["duplicates"],
            &recovered["ignored"]
        ),
        (&json!(4), &json!(2), &json!(1), &json!(1)),
        "{recovered}"
    );
    let paid = |o: &Ops| {
        let store = o.env.store.clone();
        let org = org.clone();
        let inv = inv.to_owned();
        async move {
            firmspace::payments::invoice::get(&store, &org, &inv)
                .await
                .unwrap()
                .unwrap()
                .paid
        }
    };
    assert_eq!(
        paid(&o).await,
        rust_decimal_macros::dec!(60),
        "10 + 20 + 30"
    );
    let asked = stripe.calls.lock().unwrap().clone();
    assert!(asked.len() >= 2, "paged two at a time: {asked:?}");
    assert!(asked[1].contains("starting_after=evt_"), "{asked:?}");

    // Asked again under a new key: all of it arrived now.
    let (_, again) = o.post(&recover, &key, "recover-2", &window).await;
    assert_eq!(
        (&again["new"], &again["duplicates"]),
        (&json!(0), &json!(3)),
        "{again}"
    );
    assert_eq!(paid(&o).await, rust_decimal_macros::dec!(60));
    // A window backwards or over 31 days is refused before anything is asked.
    let backwards = json!({"from": at(NOW), "to": at(NOW - hour)});
    let (status, refused) = o.post(&recover, &key, "recover-3", &backwards).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("invalid_window"))
    );
    let long = json!({"from": at(NOW - 40 * 24 * hour), "to": at(NOW)});
    let (status, refused) = o.post(&recover, &key, "recover-4", &long).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("window_too_long"))
    );
}

#[tokio::test]
async fn a_payments_integration_takes_api_url_only_where_a_stand_in_is_allowed() {
    let o = Ops::new().await;
    let (key, _) = org_by_key(&o).await;
    let made = json!({"kind": "payments", "provider": "standard", "api_url": "http://127.0.0.1:9"});
    let (status, refused) = call(&o.api, "POST", "/api/integrations", &key, made).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("invalid_field")),
        "{refused}"
    );
    let mut settings = crate::support::api::settings();
    settings.allows_loopback = false;
    let cloud = api::App::new(o.env.store.clone(), settings);
    let made = json!({"kind": "payments", "provider": "stripe", "secret": STRIPE_SECRET,
        "api_url": "http://127.0.0.1:9", "api_key": KEY});
    let (status, refused) = call(&cloud, "POST", "/api/integrations", &key, made).await;
    assert_eq!(status, 400, "{refused}");
}

#[tokio::test]
async fn a_monobank_statement_window_is_read_again_and_its_rows_stored_once() {
    use firmspace::integrations::bank::BankSettings;
    use firmspace::integrations::{self, Integration, Settings};
    let o = with_recovery(Ops::new().await);
    let (key, org) = org_by_key(&o).await;
    let stand_in = crate::support::statement::spawn(10, Duration::from_millis(300)).await;
    let bank = Integration {
        id: IntegrationId::generate(&org),
        settings: Settings::Bank(BankSettings::Monobank {
            token: crate::support::statement::TOKEN.to_owned().into(),
            account: "0".into(),
            api_url: Some(stand_in.url()),
        }),
        created_at: chrono::Utc::now(),
    };
    integrations::create(&o.env.store, &bank).await.unwrap();
    let now = chrono::Utc::now().timestamp();
    let window = json!({"from": at(now - 24 * 3600), "to": at(now)});
    let recover = format!("/ops/integrations/{}/recover", bank.id);
    let (status, first) = o.post(&recover, &key, "mono-1", &window).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(
        (&first["asked"], &first["new"], &first["duplicates"]),
        (&json!(10), &json!(10), &json!(0))
    );
    assert_eq!(o.env.count("bank_tx").await, 10);
    // With bank-import paused by a person, a recovery waits for its resumption.
    let now_at = chrono::Utc::now();
    firmspace::ops::consumers::record(&o.env.store, "bank-import", true, "admin:test", now_at)
        .await
        .unwrap();
    let (status, paused) = o.post(&recover, &key, "mono-paused", &window).await;
    assert_eq!(
        (status, paused["error"].as_str()),
        (409, Some("paused")),
        "{paused}"
    );
    firmspace::ops::consumers::record(&o.env.store, "bank-import", false, "admin:test", now_at)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (_, again) = o.post(&recover, &key, "mono-2", &window).await;
    assert_eq!(
        (&again["new"], &again["duplicates"]),
        (&json!(0), &json!(10)),
        "{again}"
    );
    assert_eq!(o.env.count("bank_tx").await, 10);
}

#[tokio::test]
async fn a_key_stripe_refuses_is_a_conflict_for_a_person_not_a_retry() {
    let o = with_recovery(Ops::new().await);
    let (key, _) = org_by_key(&o).await;
    let stripe = spawn_stripe(KEY, Vec::new()).await;
    let made = json!({"kind": "payments", "provider": "stripe", "secret": STRIPE_SECRET,
        "api_url": stripe.url()});
    let (status, created) = call(&o.api, "POST", "/api/integrations", &key, made).await;
    assert_eq!(status, 201, "{created}");
    let id = IntegrationId::parse(created["integration_id"].as_str().unwrap()).unwrap();
    // A key Stripe does not know (revoked, or another account's).
    let secrets = format!("/api/integrations/{id}/secrets");
    let wrong = json!({"secrets": {"api_key": "rk_test_revoked_0001"}});
    let auth = format!("Bearer {key}");
    let headers = [
        ("authorization", auth.as_str()),
        ("idempotency-key", "set-key"),
    ];
    let (status, set) = call_with(&o.api, "POST", &secrets, &headers, wrong).await;
    assert_eq!(status, 200, "{set}");
    let window = json!({"from": at(NOW - 3600), "to": at(NOW)});
    let recover = format!("/ops/integrations/{id}/recover");
    let (status, refused) = o.post(&recover, &key, "recover-k", &window).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (409, Some("provider_refused_key")),
        "{refused}"
    );
}

#[tokio::test]
async fn the_import_function_recovers_only_an_integration_of_the_organisation_it_is_told() {
    let o = Ops::new().await;
    let (_, org) = org_by_key(&o).await;
    let importer = importer(&o);
    let standard = fixtures::integration(
        &o.env,
        &org,
        firmspace::payments::providers::Provider::Standard,
    )
    .await;
    let ask = |org: String| firmspace::ops::recover::Ask {
        org,
        integration_id: standard.to_string(),
        from: chrono::Utc::now() - chrono::Duration::days(1),
        to: chrono::Utc::now(),
        cursor: None,
    };
    // Another organisation's asker: as if the integration were not there.
    let other = fixtures::org(&o.env).await.id;
    let answer = importer
        .process(&ask(other.to_string()).event())
        .await
        .unwrap();
    assert_eq!(
        (
            answer["status"].as_u64(),
            answer["answer"]["error"].as_str()
        ),
        (Some(404), Some("not_found")),
        "{answer}"
    );
    // Its own: a Standard Webhooks integration has no provider to ask.
    let answer = importer
        .process(&ask(org.to_string()).event())
        .await
        .unwrap();
    assert_eq!(
        (
            answer["status"].as_u64(),
            answer["answer"]["error"].as_str()
        ),
        (Some(400), Some("not_recoverable")),
        "{answer}"
    );
}

#[tokio::test]
async fn a_live_integrations_recovery_books_no_test_mode_event() {
    const LIVE: &str = "rk_live_recovery_0001";
    let o = with_recovery(Ops::new().await);
    let (key, org) = org_by_key(&o).await;
    let invoice = fixtures::invoice(&o.env, &org, rust_decimal_macros::dec!(100), "UAH").await;
    let inv = invoice.id.as_str();
    let mode = |mut e: Value, live: bool| {
        e["livemode"] = json!(live);
        e
    };
    let stripe = spawn_stripe(
        LIVE,
        vec![
            mode(
                event("evt_l", "payment_intent.succeeded", NOW - 3600, 1000, inv),
                true,
            ),
            mode(
                event("evt_t", "payment_intent.succeeded", NOW - 7200, 2000, inv),
                false,
            ),
        ],
    )
    .await;
    let made = json!({"kind": "payments", "provider": "stripe", "secret": STRIPE_SECRET,
        "api_url": stripe.url(), "api_key": LIVE});
    let (status, created) = call(&o.api, "POST", "/api/integrations", &key, made).await;
    assert_eq!(status, 201, "{created}");
    let recover = format!(
        "/ops/integrations/{}/recover",
        created["integration_id"].as_str().unwrap()
    );
    let window = json!({"from": at(NOW - 24 * 3600), "to": at(NOW)});
    let (status, recovered) = o.post(&recover, &key, "live-1", &window).await;
    assert_eq!(status, 200, "{recovered}");
    assert_eq!(
        (
            &recovered["asked"],
            &recovered["new"],
            &recovered["ignored"]
        ),
        (&json!(2), &json!(1), &json!(1)),
        "the test-mode event is ignored: {recovered}"
    );
    let paid = firmspace::payments::invoice::get(&o.env.store, &org, inv)
        .await
        .unwrap()
        .unwrap()
        .paid;
    assert_eq!(paid, rust_decimal_macros::dec!(10), "the live 10.00 alone");
    assert_eq!(
        o.env.count("payment_event").await,
        1,
        "one payment event stored"
    );
}

/// A recovery that fails for good on a stored item it cannot read (an invoice damaged by hand)
/// answers 500 with nothing internal in it: no item key, no store text (those go to the log).
#[tokio::test]
async fn a_recoverys_failure_of_ours_answers_nothing_internal() {
    let o = with_recovery(Ops::new().await);
    let (key, org) = org_by_key(&o).await;
    let invoice = fixtures::invoice(&o.env, &org, rust_decimal_macros::dec!(100), "UAH").await;
    let inv = invoice.id.as_str();
    let stripe = spawn_stripe(
        KEY,
        vec![event(
            "evt_d",
            "payment_intent.succeeded",
            NOW - 3600,
            1000,
            inv,
        )],
    )
    .await;
    let made = json!({"kind": "payments", "provider": "stripe", "secret": STRIPE_SECRET,
        "api_url": stripe.url(), "api_key": KEY});
    let (status, created) = call(&o.api, "POST", "/api/integrations", &key, made).await;
    assert_eq!(status, 201, "{created}");
    // The invoice damaged: its gross no amount.
    let pk = firmspace::payments::invoice::invoice_pk(&org, inv);
    let damage = firmspace::store::Update::new().set("gross", firmspace::store::item::s("lots"));
    assert!(o.env.store.update_if(&pk, &damage).await.unwrap());
    let recover = format!(
        "/ops/integrations/{}/recover",
        created["integration_id"].as_str().unwrap()
    );
    let window = json!({"from": at(NOW - 24 * 3600), "to": at(NOW)});
    let (status, failed) = o.post(&recover, &key, "damaged-1", &window).await;
    assert_eq!(
        (status, failed["error"].as_str()),
        (500, Some("internal")),
        "{failed}"
    );
    let text = failed.to_string();
    for internal in ["ORG#", "INVOICE#", inv, "malformed", "gross"] {
        assert!(!text.contains(internal), "{internal} in {text}");
    }
    assert_eq!(o.env.count("payment_event").await, 0);
}
