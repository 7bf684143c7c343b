//! `payment-webhook` in-process against ministack: signatures, statuses, answers, call counts.

use crate::support::app::{deliver, post, Crm};
use crate::support::fixtures::{self, monobank_request, standard_request, stripe_request, NOW};
use firmspace::payments::providers::Provider;
use lambda_http::Request;
use payment_webhook::app;
use rust_decimal_macros::dec;

#[tokio::test]
async fn a_payment_delivered_again_eight_days_later_is_still_a_duplicate() {
    let (crm, hook, app) = Crm::with_payments(Provider::Standard).await;
    let inv = crm.open_invoice(dec!(100), "UAH").await;
    let body = fixtures::standard_body("pay_late", inv.id.as_str(), Some("40.00"));
    let (status, first) = deliver(&app, &standard_request(&hook, &body, NOW)).await;
    assert_eq!((status, first["duplicate"].as_bool()), (200, Some(false)));
    // A provider's retry schedule can run for days (Stripe's: three): re-signed now, the same
    // payment id eight days on. The event's key has no expiry, so it is still the same payment.
    let later = NOW + 8 * 86_400;
    let req = fixtures::standard_request_with_id(&hook, &body, later, "msg_late");
    let at = chrono::DateTime::from_timestamp(later, 0).unwrap();
    let (status, again) = crate::support::app::deliver_at(&app, &req, at).await;
    assert_eq!(
        (
            status,
            again["duplicate"].as_bool(),
            again["applied"].as_str()
        ),
        (200, Some(true), Some("0.00"))
    );
    assert_eq!(crm.count("payment_event").await, 1);
    assert_eq!(crm.stored_invoice(inv.id.as_str()).await.paid, dec!(40));
    let events: Vec<_> = crm
        .table_snapshot()
        .await
        .into_iter()
        .filter(|i| {
            i.get("kind")
                .and_then(|k| k.as_s().ok())
                .is_some_and(|k| k == "payment_event")
        })
        .collect();
    assert!(
        !events[0].contains_key("expires_at"),
        "an event key is never given to the table's TTL"
    );
}

#[tokio::test]
async fn a_signed_standard_webhook_books_once_and_repeats_are_duplicates() {
    let (crm, hook, app) = Crm::with_payments(Provider::Standard).await;
    let inv = crm.open_invoice(dec!(100), "UAH").await;
    let body = fixtures::standard_body("pay_1", inv.id.as_str(), Some("40.00"));
    let (status, first) = deliver(&app, &standard_request(&hook, &body, NOW)).await;
    assert_eq!(status, 200);
    assert_eq!(
        (first["duplicate"].as_bool(), first["applied"].as_str()),
        (Some(false), Some("40.00"))
    );
    assert_eq!(first["invoice"]["paid"], "40.00");
    for _ in 0..2 {
        let (status, mut again) = deliver(&app, &standard_request(&hook, &body, NOW + 5)).await;
        assert_eq!(status, 200);
        assert_eq!(
            (
                again["duplicate"].as_bool(),
                again["applied"].as_str(),
                again["first_applied"].as_str()
            ),
            (Some(true), Some("0.00"), Some("40.00")),
            "this delivery applied nothing; the first applied 40.00"
        );
        assert_eq!(again["payment_id"], first["event_key"]);
        for (field, value) in [
            ("duplicate", false.into()),
            ("applied", first["applied"].clone()),
        ] {
            again[field] = value;
        }
        again.as_object_mut().unwrap().remove("first_applied");
        again.as_object_mut().unwrap().remove("payment_id");
        assert_eq!(again, first, "otherwise the first answer");
    }
    assert_eq!(crm.count("payment_event").await, 1);
}

/// DynamoDB calls of a cold first delivery, a warm first delivery and a duplicate, through one
/// warm function, checked for `source`. Written once, run for every source. `flushes`: the first
/// delivery also writes the duplicates this function counted before (one `UpdateItem`, at most
/// once per 10 s).
async fn assert_round_trips(
    crm: &Crm,
    app: &payment_webhook::App,
    (source, flushes): (&str, bool),
    deliveries: [Request; 3],
) {
    let mut counted = Vec::new();
    for req in deliveries {
        crm.env.calls.clear();
        let (status, answer) = deliver(app, &req).await;
        assert_eq!(status, 200, "{answer}");
        counted.push(crm.env.calls.take());
    }
    println!(
        "{source}: cold first {:?}; warm first {:?}; duplicate {:?}",
        counted[0], counted[1], counted[2]
    );
    let flush: &[&str] = if flushes { &["UpdateItem"] } else { &[] };
    assert_eq!(
        counted[0],
        [
            &["GetItem", "BatchGetItem", "TransactWriteItems"][..],
            flush
        ]
        .concat(),
        "{source}: cold first delivery"
    );
    assert_eq!(
        counted[1],
        ["BatchGetItem", "TransactWriteItems"],
        "{source}: warm first delivery"
    );
    assert_eq!(
        counted[2],
        ["BatchGetItem"],
        "{source}: a duplicate reads once and writes nothing"
    );
}

#[tokio::test]
async fn a_first_delivery_takes_two_calls_warm_and_a_duplicate_one_read_for_every_source() {
    let crm = Crm::new().await;
    let inv = crm.open_invoice(dec!(1000), "UAH").await;
    let inv_id = inv.id.as_str();
    let app = app(crm.store().clone());

    let hook = crm.hook(Provider::Standard).await;
    let [a, b] = ["rt_a", "rt_b"].map(|id| fixtures::standard_body(id, inv_id, Some("10.00")));
    let deliveries = [&a, &b, &b].map(|b| standard_request(&hook, b, NOW));
    assert_round_trips(&crm, &app, ("standard", false), deliveries).await;

    let hook = crm.hook(Provider::Stripe).await;
    let [a, b] = ["pi_rt_a", "pi_rt_b"].map(|id| fixtures::stripe_body("evt_rt", id, 1000, inv_id));
    let deliveries = [&a, &b, &b].map(|b| stripe_request(&hook, b, NOW));
    // Standard's duplicate, counted in memory, is written now: the first write of this function.
    assert_round_trips(&crm, &app, ("stripe", true), deliveries).await;

    let hook = crm.hook(Provider::Monobank).await;
    let mono = |id: &str| {
        format!(
            r#"{{"invoiceId":"{id}","status":"success","amount":1000,"ccy":980,"reference":"{inv_id}"}}"#
        )
    };
    let (a, b) = (mono("mono_rt_a"), mono("mono_rt_b"));
    let deliveries = [&a, &b, &b].map(|b| monobank_request(&hook, b));
    // Stripe's duplicate waits: the last write of duplicates was under 10 s ago.
    assert_round_trips(&crm, &app, ("monobank", false), deliveries).await;

    let after = crm.stored_invoice(inv_id).await;
    assert_eq!(
        (after.paid, after.version),
        (dec!(60.00), 6),
        "six payments, each booked once"
    );
}

#[tokio::test]
async fn an_invalid_signature_is_refused_and_writes_nothing() {
    let (crm, hook, app) = Crm::with_payments(Provider::Standard).await;
    let inv = crm.open_invoice(dec!(100), "UAH").await;
    let before = crm.table_snapshot().await;
    let body = fixtures::standard_body("pay_x", inv.id.as_str(), Some("40.00"));
    let signed = fixtures::standard_body("pay_x", inv.id.as_str(), Some("4.00"));
    let mut tampered = standard_request(&hook, &signed, NOW);
    *tampered.body_mut() = body.into();
    let missing = post(&format!("/hooks/{}/payments", hook.id), &[], b"{}".to_vec());
    let stale = standard_request(&hook, &signed, NOW - 301);
    for req in [tampered, missing, stale] {
        let (status, answer) = deliver(&app, &req).await;
        assert_eq!(
            (status, answer["error"].as_str()),
            (401, Some("invalid_signature"))
        );
    }
    assert_eq!(crm.table_snapshot().await, before);
}

#[tokio::test]
async fn a_refused_delivery_charges_no_organisation_with_what_it_spent() {
    let (crm, hook, app) = Crm::with_payments(Provider::Standard).await;
    let inv = crm.open_invoice(dec!(100), "UAH").await;
    // A forged delivery to an integration id of an organisation the sender made up, as Lambda
    // calls the function: refused, and what it cost is nobody's.
    let made_up = firmspace::ids::OrgId::generate();
    let forged_id = firmspace::ids::IntegrationId::generate(&made_up);
    let body = fixtures::standard_body("pay_f", inv.id.as_str(), Some("1.00"));
    let forged = standard_request(&forged_id, &body, chrono::Utc::now().timestamp());
    let res = app.handle(forged).await.unwrap();
    assert_eq!(res.status().as_u16(), 404);
    // Then a genuine new payment: the function writes what it held (its first write of it).
    let body = fixtures::standard_body("pay_g", inv.id.as_str(), Some("1.00"));
    let genuine = standard_request(&hook, &body, chrono::Utc::now().timestamp());
    assert_eq!(app.handle(genuine).await.unwrap().status().as_u16(), 200);
    let spent: Vec<String> = crm
        .env
        .items_of("spent")
        .await
        .iter()
        .filter_map(|i| i.get("pk").and_then(|v| v.as_s().ok()).cloned())
        .collect();
    assert!(
        spent
            .iter()
            .any(|pk| pk.starts_with(&format!("ORG#{}#SPENT#", crm.org))),
        "the genuine payment's organisation: {spent:?}"
    );
    assert!(
        !spent.iter().any(|pk| pk.contains(made_up.as_str())),
        "nothing for the made-up one: {spent:?}"
    );
}

#[tokio::test]
async fn bad_requests_get_clear_errors_and_write_nothing() {
    let (crm, hook, app) = Crm::with_payments(Provider::Standard).await;
    let before = crm.table_snapshot().await;
    let nowhere = firmspace::ids::IntegrationId::generate(&crm.org);
    let body = fixtures::standard_body("p", "inv", None);
    assert_eq!(
        deliver(&app, &standard_request(&nowhere, &body, NOW))
            .await
            .0,
        404
    );
    let huge = "x".repeat(300 * 1024);
    assert_eq!(
        deliver(&app, &standard_request(&hook, &huge, NOW)).await.0,
        413
    );
    assert_eq!(crm.table_snapshot().await, before);
}

#[tokio::test]
async fn a_payment_for_an_unknown_invoice_answers_200_and_waits_for_review() {
    let (crm, hook, app) = Crm::with_payments(Provider::Standard).await;
    let body = fixtures::standard_body("pay_lost", "inv_nowhere", Some("12.00"));
    let (status, answer) = deliver(&app, &standard_request(&hook, &body, NOW)).await;
    assert_eq!(
        (status, answer["outcome"].as_str()),
        (200, Some("unmatched"))
    );
    assert_eq!(crm.count("payment_event").await, 1);
    assert_eq!(crm.count("review").await, 1);
}

#[tokio::test]
async fn stripe_payment_intent_succeeded_books_once() {
    let (crm, hook, app) = Crm::with_payments(Provider::Stripe).await;
    let inv = crm.open_invoice(dec!(100), "UAH").await;
    // Two events (different evt ids) about the same intent: one payment.
    for evt in ["evt_1", "evt_2"] {
        let body = fixtures::stripe_body(evt, "pi_1", 4000, inv.id.as_str());
        assert_eq!(
            deliver(&app, &stripe_request(&hook, &body, NOW)).await.0,
            200
        );
    }
    let after = crm.stored_invoice(inv.id.as_str()).await;
    assert_eq!((after.paid, after.version), (dec!(40.00), 1));
    assert_eq!(
        deliver(&app, &stripe_request(&hook, "{}", NOW - 400))
            .await
            .0,
        401
    );
}

#[tokio::test]
async fn an_api_gateway_event_with_a_base64_body_is_verified_over_the_decoded_bytes() {
    use base64::Engine;
    let crm = Crm::new().await;
    let hook = crm.hook(Provider::Standard).await;
    let inv = crm.open_invoice(dec!(100), "UAH").await;
    let body = fixtures::standard_body("pay_gw", inv.id.as_str(), Some("25.00"));
    let signature = firmspace::signature::standard::sign(
        fixtures::STANDARD_SECRET,
        "msg_fixture",
        NOW,
        body.as_bytes(),
    )
    .unwrap();
    let event = include_str!("fixtures/apigw_v2_payment.json")
        .replace("INTEGRATION_ID", &hook.id)
        .replace("TIMESTAMP", &NOW.to_string())
        .replace("SIGNATURE", &signature)
        .replace(
            "BODY_BASE64",
            &base64::engine::general_purpose::STANDARD.encode(&body),
        );
    let req = lambda_http::request::from_str(&event).expect("an API Gateway v2 event");
    let (status, answer) = deliver(&app(crm.store().clone()), &req).await;
    assert_eq!((status, answer["applied"].as_str()), (200, Some("25.00")));
    assert_eq!(crm.count("payment_event").await, 1);
}

#[tokio::test]
async fn a_live_stripe_integration_books_no_test_mode_event_and_a_full_secret_key_is_refused() {
    use firmspace::payments::providers::PaymentSettings;
    let crm = Crm::new().await;
    let inv = crm.open_invoice(dec!(100), "UAH").await;
    let app = app(crm.store().clone());
    let stripe = |live: bool, key: &str| PaymentSettings::Stripe {
        secret: fixtures::STRIPE_SECRET.to_owned().into(),
        api_key: Some(key.to_owned().into()),
        api_url: None,
        live,
    };
    let in_mode = |intent: &str, livemode: bool| {
        let mut body: serde_json::Value = serde_json::from_str(&fixtures::stripe_body(
            "evt_m",
            intent,
            1000,
            inv.id.as_str(),
        ))
        .unwrap();
        body["livemode"] = livemode.into();
        body.to_string()
    };
    // An integration with a live key: a test-mode event is no money.
    let live =
        fixtures::payments_integration(&crm.env, &crm.org, stripe(true, "rk_live_0123456789"))
            .await;
    let (status, answer) = deliver(
        &app,
        &stripe_request(&live, &in_mode("pi_test", false), NOW),
    )
    .await;
    assert_eq!(
        (
            status,
            answer["status"].as_str(),
            answer["provider_status"].as_str()
        ),
        (200, Some("ignored"), Some("test_mode")),
        "{answer}"
    );
    assert_eq!(crm.count("payment_event").await, 0);
    let (status, answer) =
        deliver(&app, &stripe_request(&live, &in_mode("pi_live", true), NOW)).await;
    assert_eq!(
        (status, answer["applied"].as_str()),
        (200, Some("10.00")),
        "{answer}"
    );
    // One with a test key books its test-mode events (it is a test account).
    let test =
        fixtures::payments_integration(&crm.env, &crm.org, stripe(false, "rk_test_0123456789"))
            .await;
    let (status, answer) =
        deliver(&app, &stripe_request(&test, &in_mode("pi_t2", false), NOW)).await;
    assert_eq!(
        (status, answer["applied"].as_str()),
        (200, Some("10.00")),
        "{answer}"
    );
    assert_eq!(crm.count("payment_event").await, 2);
    // A full secret key is refused: it could move the money, not only read events.
    let (status, refused) = crm
        .call(
            "POST",
            "/api/integrations",
            serde_json::json!({"kind": "payments", "provider": "stripe", "api_key": "sk_live_0123456789abc"}),
        )
        .await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("invalid_api_key")),
        "{refused}"
    );
}
