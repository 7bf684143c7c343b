//! `payment-webhook` in-process against ministack: signatures, statuses, answers, call counts.

use crate::support::fixtures::{now, NOW};
use crate::support::{fixtures, json_of, request, TestEnv};
use firmspace::payments::providers::Provider;
use lambda_http::Request;
use payment_webhook::app;
use rust_decimal_macros::dec;

#[tokio::test]
async fn a_signed_standard_webhook_books_once_and_repeats_are_duplicates() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await;
    let hook = fixtures::integration(&env, &org.id, Provider::Standard).await;
    let inv = fixtures::invoice(&env, &org.id, dec!(100), "UAH").await;
    let app = app(env.store.clone());
    let body = fixtures::standard_body("pay_1", inv.id.as_str(), Some("40.00"));

    let first = app
        .respond(&fixtures::standard_request(&hook, &body, NOW), now())
        .await
        .unwrap();
    assert_eq!(first.status(), 200);
    let first = json_of(&first);
    assert_eq!(
        (first["duplicate"].as_bool(), first["applied"].as_str()),
        (Some(false), Some("40.00"))
    );
    assert_eq!(first["invoice"]["paid"], "40.00");

    for _ in 0..2 {
        let again = app
            .respond(&fixtures::standard_request(&hook, &body, NOW + 5), now())
            .await
            .unwrap();
        assert_eq!(again.status(), 200);
        let mut again = json_of(&again);
        assert_eq!(again["duplicate"], true);
        again["duplicate"] = false.into();
        assert_eq!(
            again, first,
            "a repeat gets the first answer, marked duplicate"
        );
    }
    assert_eq!(env.count("payment_event").await, 1);
}

/// DynamoDB calls of a cold first delivery, a warm first delivery and a duplicate, through one
/// warm function. Written once, run for every source.
async fn round_trips(
    env: &TestEnv,
    app: &payment_webhook::App,
    deliveries: [Request; 3],
) -> [Vec<String>; 3] {
    let mut counted = Vec::new();
    for req in deliveries {
        env.calls.clear();
        let res = app.respond(&req, now()).await.unwrap();
        assert_eq!(res.status(), 200, "{}", json_of(&res));
        counted.push(env.calls.take());
    }
    counted.try_into().unwrap()
}

fn assert_round_trips(source: &str, counted: [Vec<String>; 3]) {
    println!(
        "{source}: cold first {:?}; warm first {:?}; duplicate {:?}",
        counted[0], counted[1], counted[2]
    );
    assert_eq!(
        counted[0],
        ["GetItem", "BatchGetItem", "TransactWriteItems"],
        "{source}: cold first delivery"
    );
    assert_eq!(
        counted[1],
        ["BatchGetItem", "TransactWriteItems"],
        "{source}: warm first delivery"
    );
    assert_eq!(
        counted[2],
        ["BatchGetItem", "UpdateItem"],
        "{source}: a duplicate reads once and writes nothing but the hour's duplicate tally"
    );
}

#[tokio::test]
async fn a_first_delivery_takes_two_calls_warm_and_a_duplicate_one_read_for_every_source() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await;
    let inv = fixtures::invoice(&env, &org.id, dec!(1000), "UAH").await;
    let app = app(env.store.clone());

    let hook = fixtures::integration(&env, &org.id, Provider::Standard).await;
    let body = |id: &str| fixtures::standard_body(id, inv.id.as_str(), Some("10.00"));
    let (a, b) = (body("rt_a"), body("rt_b"));
    let deliveries = [&a, &b, &b].map(|b| fixtures::standard_request(&hook, b, NOW));
    assert_round_trips("standard", round_trips(&env, &app, deliveries).await);

    let hook = fixtures::integration(&env, &org.id, Provider::Stripe).await;
    let body = |id: &str| {
        serde_json::json!({"id": "evt_rt", "type": "payment_intent.succeeded", "created": NOW,
        "data": {"object": {"id": id, "amount_received": 1000, "currency": "uah", "metadata": {"invoice_id": inv.id.as_str()}}}}).to_string()
    };
    let (a, b) = (body("pi_rt_a"), body("pi_rt_b"));
    let deliveries = [&a, &b, &b].map(|b| fixtures::stripe_request(&hook, b, NOW));
    assert_round_trips("stripe", round_trips(&env, &app, deliveries).await);

    let hook = fixtures::integration(&env, &org.id, Provider::Monobank).await;
    let body = |id: &str| {
        format!(
            r#"{{"invoiceId":"{id}","status":"success","amount":1000,"ccy":980,"reference":"{}"}}"#,
            inv.id
        )
    };
    let (a, b) = (body("mono_rt_a"), body("mono_rt_b"));
    let deliveries = [&a, &b, &b].map(|b| fixtures::monobank_request(&hook, b));
    assert_round_trips("monobank", round_trips(&env, &app, deliveries).await);

    let after = firmspace::payments::invoice::get(&env.store, &org.id, inv.id.as_str())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (after.paid, after.version),
        (dec!(60.00), 6),
        "six payments, each booked once"
    );
}

#[tokio::test]
async fn an_invalid_signature_is_refused_and_writes_nothing() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await;
    let hook = fixtures::integration(&env, &org.id, Provider::Standard).await;
    let inv = fixtures::invoice(&env, &org.id, dec!(100), "UAH").await;
    let app = app(env.store.clone());
    let before = env.items().await.len();
    let body = fixtures::standard_body("pay_x", inv.id.as_str(), Some("40.00"));
    let signed = fixtures::standard_body("pay_x", inv.id.as_str(), Some("4.00"));
    let mut tampered = fixtures::standard_request(&hook, &signed, NOW);
    *tampered.body_mut() = body.into();
    let missing = request(
        "POST",
        &format!("/hooks/{}/payments", hook.id),
        &[],
        b"{}".to_vec(),
    );
    let stale = fixtures::standard_request(&hook, &signed, NOW - 301);
    for req in [tampered, missing, stale] {
        let res = app.respond(&req, now()).await.unwrap_err().into_response();
        assert_eq!(res.status(), 401);
        assert_eq!(json_of(&res)["error"], "invalid_signature");
    }
    assert_eq!(env.items().await.len(), before);
}

#[tokio::test]
async fn bad_requests_get_clear_errors_and_write_nothing() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await;
    let hook = fixtures::integration(&env, &org.id, Provider::Standard).await;
    let app = app(env.store.clone());
    let before = env.items().await.len();
    let unknown = fixtures::standard_request(
        &firmspace::ids::IntegrationId::generate(&org.id),
        &fixtures::standard_body("p", "inv", None),
        NOW,
    );
    let res = app
        .respond(&unknown, now())
        .await
        .unwrap_err()
        .into_response();
    assert_eq!(res.status(), 404);

    let huge = "x".repeat(300 * 1024);
    let res = app
        .respond(&fixtures::standard_request(&hook, &huge, NOW), now())
        .await
        .unwrap_err()
        .into_response();
    assert_eq!(res.status(), 413);
    assert_eq!(env.items().await.len(), before);
}

#[tokio::test]
async fn a_payment_for_an_unknown_invoice_answers_200_and_waits_for_review() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await;
    let hook = fixtures::integration(&env, &org.id, Provider::Standard).await;
    let app = app(env.store.clone());
    let body = fixtures::standard_body("pay_lost", "inv_nowhere", Some("12.00"));
    let res = app
        .respond(&fixtures::standard_request(&hook, &body, NOW), now())
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(json_of(&res)["outcome"], "unmatched");
    assert_eq!(env.count("payment_event").await, 1);
    assert_eq!(env.count("review").await, 1);
}

#[tokio::test]
async fn stripe_payment_intent_succeeded_books_once() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await;
    let hook = fixtures::integration(&env, &org.id, Provider::Stripe).await;
    let inv = fixtures::invoice(&env, &org.id, dec!(100), "UAH").await;
    let app = app(env.store.clone());
    // Two events (different evt ids) about the same intent: one payment.
    for evt in ["evt_1", "evt_2"] {
        let body = serde_json::json!({
            "id": evt, "type": "payment_intent.succeeded", "created": NOW,
            "data": {"object": {"id": "pi_1", "amount_received": 4000, "currency": "uah",
                                 "metadata": {"invoice_id": inv.id.as_str()}}}
        })
        .to_string();
        let res = app
            .respond(&fixtures::stripe_request(&hook, &body, NOW), now())
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
    }
    let after = firmspace::payments::invoice::get(&env.store, &org.id, inv.id.as_str())
        .await
        .unwrap()
        .unwrap();
    assert_eq!((after.paid, after.version), (dec!(40.00), 1));
    let res = app
        .respond(&fixtures::stripe_request(&hook, "{}", NOW - 400), now())
        .await
        .unwrap_err()
        .into_response();
    assert_eq!(res.status(), 401);
}

#[tokio::test]
async fn an_api_gateway_event_with_a_base64_body_is_verified_over_the_decoded_bytes() {
    use base64::Engine;
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await;
    let hook = fixtures::integration(&env, &org.id, Provider::Standard).await;
    let inv = fixtures::invoice(&env, &org.id, dec!(100), "UAH").await;
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
    let res = app(env.store.clone()).respond(&req, now()).await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(json_of(&res)["applied"], "25.00");
    assert_eq!(env.count("payment_event").await, 1);
}
