//! Hostile webhook deliveries: refused before anything is read, or, when the signature holds and
//! the money is absurd, kept for a person and nothing booked.

use super::{assert_refused, raw};
use crate::support::app::{deliver, Crm};
use crate::support::fixtures::{self, monobank_request, standard_request, stripe_request, NOW};
use firmspace::ids::IntegrationId;
use firmspace::payments::providers::Provider;
use lambda_http::{Body, Request};
use rust_decimal_macros::dec;
use serde_json::{json, Value};

/// One integration of each provider, and an open invoice of 100 UAH.
struct Hooks {
    standard: IntegrationId,
    stripe: IntegrationId,
    monobank: IntegrationId,
    invoice: String,
}

async fn hooks(crm: &Crm) -> Hooks {
    Hooks {
        standard: crm.hook(Provider::Standard).await,
        stripe: crm.hook(Provider::Stripe).await,
        monobank: crm.hook(Provider::Monobank).await,
        invoice: crm
            .open_invoice(dec!(100), "UAH")
            .await
            .id
            .as_str()
            .to_owned(),
    }
}

fn url(id: &IntegrationId) -> String {
    format!("/hooks/{}/payments", id.id)
}

/// Standard deliveries whose signature or timestamp is wrong or absurd.
fn bad_standard_signatures(h: &Hooks, body: &str) -> Vec<(&'static str, Request)> {
    let signed = standard_request(&h.standard, body, NOW);
    let sig = signed.headers()["webhook-signature"].to_str().unwrap();
    let with = |ts: &str, signature: &str| {
        let headers = [
            ("webhook-id", "msg_1"),
            ("webhook-timestamp", ts),
            ("webhook-signature", signature),
        ];
        raw("POST", &url(&h.standard), &headers, body.as_bytes())
    };
    let other = "v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
    vec![
        (
            "no signature headers",
            raw("POST", &url(&h.standard), &[], body.as_bytes()),
        ),
        ("signature of another body", with(&NOW.to_string(), other)),
        ("timestamp i64::MIN", with("-9223372036854775808", sig)),
        ("timestamp i64::MAX", with("9223372036854775807", sig)),
        ("timestamp beyond i64", with("99999999999999999999999", sig)),
        ("timestamp not a number", with("yesterday", sig)),
        (
            "timestamp 6 minutes old",
            with(&(NOW - 360).to_string(), sig),
        ),
    ]
}

/// Stripe and monobank deliveries with broken signatures, and requests no webhook serves.
fn bad_other_requests(h: &Hooks, body: &str) -> Vec<(&'static str, Request)> {
    let post = |path: &str, headers: &[(&str, &str)]| raw("POST", path, headers, body.as_bytes());
    let mut big = standard_request(&h.standard, &"x".repeat(300 * 1024), NOW);
    *big.body_mut() = Body::from(vec![b' '; 300 * 1024]);
    let no_v1 = format!("t={NOW}");
    vec![
        (
            "stripe t=i64::MIN",
            post(
                &url(&h.stripe),
                &[("stripe-signature", "t=-9223372036854775808,v1=00")],
            ),
        ),
        (
            "stripe without v1",
            post(&url(&h.stripe), &[("stripe-signature", &no_v1)]),
        ),
        (
            "monobank garbage X-Sign",
            post(&url(&h.monobank), &[("x-sign", "bm90IGEgc2lnbmF0dXJl")]),
        ),
        ("monobank no X-Sign", post(&url(&h.monobank), &[])),
        ("300 KiB body", big),
        (
            "GET on a webhook URL",
            raw("GET", &url(&h.standard), &[], b""),
        ),
        (
            "unknown integration",
            post("/hooks/o0123456789ab_0123456789abcdef/payments", &[]),
        ),
        (
            "malformed integration id",
            post("/hooks/..%2F..%2Fetc/payments", &[]),
        ),
        (
            "another kind",
            post(&format!("/hooks/{}/messages", h.standard.id), &[]),
        ),
    ]
}

#[tokio::test]
async fn hostile_webhook_deliveries_are_refused_unread_and_write_nothing() {
    let crm = Crm::new().await;
    let h = hooks(&crm).await;
    let app = payment_webhook::app(crm.store().clone());
    let body = fixtures::standard_body("pay_h1", &h.invoice, Some("40.00"));
    let before = crm.table_snapshot().await;
    let mut cases = bad_standard_signatures(&h, &body);
    cases.extend(bad_other_requests(&h, &body));
    assert_eq!(cases.len(), 16);
    for (case, req) in cases {
        let (status, answer) = deliver(&app, &req).await;
        assert_refused(case, status, &answer);
    }
    assert!(
        crm.table_snapshot().await == before,
        "a refused delivery wrote to the table"
    );
}

/// Verified deliveries whose money no invoice can take.
fn absurd_deliveries(h: &Hooks) -> Vec<(&'static str, Request)> {
    let id = h.invoice.as_str();
    let standard = |amount: Value, currency: &str, invoice: &str| {
        let body = json!({"type": "payment.succeeded", "data": {"payment_id": format!("p_{amount}_{currency}").replace('"', ""), "invoice_id": invoice, "amount": amount, "currency": currency}});
        standard_request(&h.standard, &body.to_string(), NOW)
    };
    let stripe = |minor: Value, currency: &str| {
        let body = json!({"type": "payment_intent.succeeded", "created": NOW, "data": {"object": {"id": format!("pi_{minor}"), "amount_received": minor, "currency": currency, "metadata": {"invoice_id": id}}}});
        stripe_request(&h.stripe, &body.to_string(), NOW)
    };
    let monobank = |minor: Value, ccy: u16| {
        let body = json!({"invoiceId": format!("mb_{minor}_{ccy}"), "status": "success", "amount": minor, "finalAmount": minor, "ccy": ccy, "reference": id});
        monobank_request(&h.monobank, &body.to_string())
    };
    let long_ref = "i".repeat(5000);
    let forty_digits = json!("1234567890123456789012345678901234567890");
    vec![
        (
            "amount beyond the limit",
            standard(json!("99999999999"), "UAH", id),
        ),
        ("40-digit amount", standard(forty_digits, "UAH", id)),
        ("kopiyka fraction", standard(json!("40.001"), "UAH", id)),
        ("unknown currency", standard(json!("40.00"), "XXY", id)),
        ("won with fractions", standard(json!("40.5"), "KRW", id)),
        ("amount as number", standard(json!(40), "UAH", id)),
        (
            "5000-char invoice id",
            standard(json!("40.00"), "UAH", &long_ref),
        ),
        (
            "stripe i64::MAX minor units",
            stripe(json!(i64::MAX), "uah"),
        ),
        ("stripe unknown currency", stripe(json!(4000), "zzz")),
        ("monobank ccy 0", monobank(json!(4000), 0)),
        (
            "monobank beyond the limit",
            monobank(json!(1_000_000_000_000_i64), 980),
        ),
    ]
}

#[tokio::test]
async fn verified_payloads_with_absurd_money_are_kept_for_review_and_book_nothing() {
    let crm = Crm::new().await;
    let h = hooks(&crm).await;
    let app = payment_webhook::app(crm.store().clone());
    let deliveries = absurd_deliveries(&h);
    let count = deliveries.len();
    for (case, req) in deliveries {
        let (status, answer) = deliver(&app, &req).await;
        assert_eq!(
            (status, answer["status"].as_str()),
            (200, Some("unparseable")),
            "{case}: {answer}"
        );
    }
    assert_eq!(crm.count("payment_event").await, 0);
    assert_eq!(crm.count("review").await, count);
    let after = crm.stored_invoice(&h.invoice).await;
    assert_eq!((after.paid, after.version), (dec!(0), 0));
}
