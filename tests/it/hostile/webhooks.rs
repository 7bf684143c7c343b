//! Hostile webhook deliveries: refused before anything is read, or, when the signature holds and
//! the money is absurd, kept for a person and nothing booked.

use super::{assert_refused, raw, snapshot};
use crate::support::fixtures::{self, now, NOW};
use crate::support::{json_of, TestEnv};
use firmspace::http::ApiError;
use firmspace::payments::providers::Provider;
use lambda_http::{Body, Request};
use rust_decimal_macros::dec;
use serde_json::{json, Value};

async fn hook(app: &payment_webhook::App, req: Request) -> (u16, Value) {
    let res = app
        .respond(&req, now())
        .await
        .unwrap_or_else(ApiError::into_response);
    (res.status().as_u16(), json_of(&res))
}

#[tokio::test]
async fn hostile_webhook_deliveries_are_refused_unread_and_write_nothing() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await;
    let standard = fixtures::integration(&env, &org.id, Provider::Standard).await;
    let stripe = fixtures::integration(&env, &org.id, Provider::Stripe).await;
    let monobank = fixtures::integration(&env, &org.id, Provider::Monobank).await;
    let inv = fixtures::invoice(&env, &org.id, dec!(100), "UAH").await;
    let app = payment_webhook::app(env.store.clone());
    let body = fixtures::standard_body("pay_h1", inv.id.as_str(), Some("40.00"));
    let url = |id: &firmspace::ids::IntegrationId| format!("/hooks/{}/payments", id.id);
    let before = snapshot(&env).await;

    let signed = fixtures::standard_request(&standard, &body, NOW);
    let sig = signed.headers()["webhook-signature"]
        .to_str()
        .unwrap()
        .to_owned();
    let standard_with = |ts: &str, signature: &str| {
        raw(
            "POST",
            &url(&standard),
            &[
                ("webhook-id", "msg_1"),
                ("webhook-timestamp", ts),
                ("webhook-signature", signature),
            ],
            body.as_bytes(),
        )
    };
    let mut big = fixtures::standard_request(&standard, &"x".repeat(300 * 1024), NOW);
    *big.body_mut() = Body::from(vec![b' '; 300 * 1024]);
    let cases: Vec<(&str, Request)> = vec![
        (
            "no signature headers",
            raw("POST", &url(&standard), &[], body.as_bytes()),
        ),
        (
            "signature of another body",
            standard_with(
                &NOW.to_string(),
                "v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
            ),
        ),
        (
            "timestamp i64::MIN",
            standard_with("-9223372036854775808", &sig),
        ),
        (
            "timestamp i64::MAX",
            standard_with("9223372036854775807", &sig),
        ),
        (
            "timestamp beyond i64",
            standard_with("99999999999999999999999", &sig),
        ),
        ("timestamp not a number", standard_with("yesterday", &sig)),
        (
            "timestamp 6 minutes old",
            standard_with(&(NOW - 360).to_string(), &sig),
        ),
        (
            "stripe t=i64::MIN",
            raw(
                "POST",
                &url(&stripe),
                &[("stripe-signature", "t=-9223372036854775808,v1=00")],
                body.as_bytes(),
            ),
        ),
        (
            "stripe without v1",
            raw(
                "POST",
                &url(&stripe),
                &[("stripe-signature", &format!("t={NOW}"))],
                body.as_bytes(),
            ),
        ),
        (
            "monobank garbage X-Sign",
            raw(
                "POST",
                &url(&monobank),
                &[("x-sign", "bm90IGEgc2lnbmF0dXJl")],
                body.as_bytes(),
            ),
        ),
        (
            "monobank no X-Sign",
            raw("POST", &url(&monobank), &[], body.as_bytes()),
        ),
        ("300 KiB body", big),
        (
            "GET on a webhook URL",
            raw("GET", &url(&standard), &[], b""),
        ),
        (
            "unknown integration",
            raw(
                "POST",
                "/hooks/o0123456789ab_0123456789abcdef/payments",
                &[],
                body.as_bytes(),
            ),
        ),
        (
            "malformed integration id",
            raw(
                "POST",
                "/hooks/..%2F..%2Fetc/payments",
                &[],
                body.as_bytes(),
            ),
        ),
        (
            "another kind",
            raw(
                "POST",
                &format!("/hooks/{}/messages", standard.id),
                &[],
                body.as_bytes(),
            ),
        ),
    ];
    for (case, req) in cases {
        let (status, answer) = hook(&app, req).await;
        assert_refused(case, status, &answer);
    }
    assert!(
        snapshot(&env).await == before,
        "a refused delivery wrote to the table"
    );
}

#[tokio::test]
async fn verified_payloads_with_absurd_money_are_kept_for_review_and_book_nothing() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await;
    let standard = fixtures::integration(&env, &org.id, Provider::Standard).await;
    let stripe = fixtures::integration(&env, &org.id, Provider::Stripe).await;
    let monobank = fixtures::integration(&env, &org.id, Provider::Monobank).await;
    let inv = fixtures::invoice(&env, &org.id, dec!(100), "UAH").await;
    let app = payment_webhook::app(env.store.clone());
    let id = inv.id.as_str();
    let standard_body = |amount: Value, currency: &str, invoice: &str| {
        json!({"type": "payment.succeeded", "data": {"payment_id": format!("p_{amount}_{currency}").replace('"', ""), "invoice_id": invoice, "amount": amount, "currency": currency}}).to_string()
    };
    let stripe_body = |minor: Value, currency: &str| {
        json!({"type": "payment_intent.succeeded", "created": NOW, "data": {"object": {"id": format!("pi_{minor}"), "amount_received": minor, "currency": currency, "metadata": {"invoice_id": id}}}}).to_string()
    };
    let monobank_body = |minor: Value, ccy: u16| {
        json!({"invoiceId": format!("mb_{minor}_{ccy}"), "status": "success", "amount": minor, "finalAmount": minor, "ccy": ccy, "reference": id}).to_string()
    };
    let long_ref = "i".repeat(5000);
    let deliveries = vec![
        (
            "amount beyond the limit",
            fixtures::standard_request(
                &standard,
                &standard_body(json!("99999999999"), "UAH", id),
                NOW,
            ),
        ),
        (
            "40-digit amount",
            fixtures::standard_request(
                &standard,
                &standard_body(json!("1234567890123456789012345678901234567890"), "UAH", id),
                NOW,
            ),
        ),
        (
            "kopiyka fraction",
            fixtures::standard_request(&standard, &standard_body(json!("40.001"), "UAH", id), NOW),
        ),
        (
            "unknown currency",
            fixtures::standard_request(&standard, &standard_body(json!("40.00"), "XXY", id), NOW),
        ),
        (
            "won with fractions",
            fixtures::standard_request(&standard, &standard_body(json!("40.5"), "KRW", id), NOW),
        ),
        (
            "amount as number",
            fixtures::standard_request(&standard, &standard_body(json!(40), "UAH", id), NOW),
        ),
        (
            "5000-char invoice id",
            fixtures::standard_request(
                &standard,
                &standard_body(json!("40.00"), "UAH", &long_ref),
                NOW,
            ),
        ),
        (
            "stripe i64::MAX minor units",
            fixtures::stripe_request(&stripe, &stripe_body(json!(i64::MAX), "uah"), NOW),
        ),
        (
            "stripe unknown currency",
            fixtures::stripe_request(&stripe, &stripe_body(json!(4000), "zzz"), NOW),
        ),
        (
            "monobank ccy 0",
            fixtures::monobank_request(&monobank, &monobank_body(json!(4000), 0)),
        ),
        (
            "monobank beyond the limit",
            fixtures::monobank_request(
                &monobank,
                &monobank_body(json!(1_000_000_000_000_i64), 980),
            ),
        ),
    ];
    let count = deliveries.len();
    for (case, req) in deliveries {
        let (status, answer) = hook(&app, req).await;
        assert_eq!(
            (status, answer["status"].as_str()),
            (200, Some("unparseable")),
            "{case}: {answer}"
        );
    }
    assert_eq!(env.count("payment_event").await, 0);
    assert_eq!(env.count("review").await, count);
    let after = firmspace::payments::invoice::get(&env.store, &org.id, id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((after.paid, after.version), (dec!(0), 0));
}
