//! monobank acquiring in-process against ministack: statuses, success and reversal in any order,
//! key rotation against a loopback stand-in for monobank's API.

use crate::support::app::{deliver, Crm};
use crate::support::fixtures::{self, monobank_request, NOW};
use crate::support::target::{spawn_monobank_with, MonobankApi};
use firmspace::ids::IntegrationId;
use firmspace::payments::providers::monobank::Merchant;
use firmspace::payments::providers::{PaymentSettings, Provider};
use payment_webhook::app;
use rust_decimal_macros::dec;
use serde_json::{json, Value};

/// A monobank delivery's body: payment `id` in `status`, 42.00 UAH for `reference`.
fn mono(id: &str, status: &str, reference: &str) -> String {
    format!(
        r#"{{"invoiceId":"{id}","status":"{status}","amount":4200,"ccy":980,"reference":"{reference}"}}"#
    )
}

/// `body`, signed, then changed: what a forger sends.
fn forged(hook: &IntegrationId, body: &str, amount: &str) -> lambda_http::Request {
    let mut forged = monobank_request(hook, body);
    *forged.body_mut() = body.replace("4200", amount).into();
    forged
}

#[tokio::test]
async fn statuses_before_paid_are_ignored_and_write_nothing() {
    let crm = Crm::new().await;
    let mono_hook = crm.hook(Provider::Monobank).await;
    let std_hook = crm.hook(Provider::Standard).await;
    let app = app(crm.store().clone());
    let before = crm.table_snapshot().await;
    for status in ["created", "processing", "hold", "failure"] {
        let body = mono("p_1", status, "inv_x").replace("4200", "100");
        let (status, answer) = deliver(&app, &monobank_request(&mono_hook, &body)).await;
        assert_eq!((status, answer["status"].as_str()), (200, Some("ignored")));
    }
    let body = r#"{"type":"payment.failed","data":{"payment_id":"p"}}"#;
    let (_, answer) = deliver(&app, &fixtures::standard_request(&std_hook, body, NOW)).await;
    assert_eq!(answer["status"], "ignored");
    assert_eq!(crm.table_snapshot().await, before);
}

#[tokio::test]
async fn monobank_success_then_reversed_moves_the_balance_there_and_back_once() {
    let (crm, hook, app) = Crm::with_payments(Provider::Monobank).await;
    let inv = crm.open_invoice(dec!(42), "UAH").await;
    let body = |status: &str| mono("p2_9ZgpZVsl3", status, inv.id.as_str());
    for _ in 0..3 {
        let (status, _) = deliver(&app, &monobank_request(&hook, &body("success"))).await;
        assert_eq!(status, 200);
    }
    let paid = crm.stored_invoice(inv.id.as_str()).await;
    assert_eq!(
        (paid.paid, firmspace::store::item::tag_name(&paid.status)),
        (dec!(42.00), "paid".to_owned())
    );
    for _ in 0..3 {
        let (status, _) = deliver(&app, &monobank_request(&hook, &body("reversed"))).await;
        assert_eq!(status, 200);
    }
    let back = crm.stored_invoice(inv.id.as_str()).await;
    assert_eq!(
        (
            back.paid,
            firmspace::store::item::tag_name(&back.status),
            back.version
        ),
        (dec!(0), "open".to_owned(), 2)
    );
    assert_eq!(crm.count("payment_event").await, 2);
    let (status, _) = deliver(&app, &forged(&hook, &body("success"), "9999")).await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn a_reversal_naming_another_invoice_takes_the_money_back_where_its_payment_went() {
    let (crm, hook, app) = Crm::with_payments(Provider::Monobank).await;
    let paid = crm.open_invoice(dec!(42), "UAH").await;
    let other = crm.open_invoice(dec!(42), "UAH").await;
    let success = mono("p2_reversed_elsewhere", "success", paid.id.as_str());
    let (status, _) = deliver(&app, &monobank_request(&hook, &success)).await;
    assert_eq!(status, 200);
    // The reversal's body names the other invoice: the payment it reverses decides.
    let reversed = mono("p2_reversed_elsewhere", "reversed", other.id.as_str());
    let (status, answer) = deliver(&app, &monobank_request(&hook, &reversed)).await;
    assert_eq!(
        (status, answer["applied"].as_str()),
        (200, Some("-42.00")),
        "{answer}"
    );
    let back = crm.stored_invoice(paid.id.as_str()).await;
    assert_eq!((back.paid, back.version), (dec!(0), 2));
    let untouched = crm.stored_invoice(other.id.as_str()).await;
    assert_eq!((untouched.paid, untouched.version), (dec!(0), 0));
}

/// A merchant with a token whose stored key is `public_key`, and monobank's stand-in, which
/// gives out the fixtures' key and knows `known` as this merchant's invoices.
async fn merchant(
    crm: &Crm,
    public_key: String,
    known: Vec<Value>,
) -> (IntegrationId, MonobankApi) {
    let settings = PaymentSettings::Monobank(Merchant {
        public_key,
        token: Some("merchant-token".to_owned().into()),
        key_fetched_at: None,
    });
    let hook = fixtures::payments_integration(&crm.env, &crm.org, settings).await;
    let key = fixtures::monobank_public_key_b64();
    let api = spawn_monobank_with(key, "merchant-token", known).await;
    (hook, api)
}

/// A merchant whose stored key is the fixtures' own.
async fn confirming_merchant(crm: &Crm, known: Vec<Value>) -> (IntegrationId, MonobankApi) {
    merchant(crm, fixtures::monobank_public_key_b64(), known).await
}

/// A public key other than the fixtures', as a merchant held before monobank rotated it.
fn old_key() -> String {
    firmspace::signature::monobank::StandIn::from_scalar([9u8; 32])
        .unwrap()
        .public_key()
}

#[tokio::test]
async fn a_rotated_monobank_key_is_fetched_once_and_kept() {
    let crm = Crm::new().await;
    let inv = crm.open_invoice(dec!(42), "UAH").await;
    let known = json!({"invoiceId": "p_rot", "status": "success", "amount": 4200, "finalAmount": 4200, "ccy": 980, "reference": inv.id.as_str()});
    let (hook, monobank) = merchant(&crm, old_key(), vec![known]).await;
    let app = payment_webhook::app_with_monobank_api(crm.store().clone(), &monobank.url());
    let body = mono("p_rot", "success", inv.id.as_str());
    let (status, first) = deliver(&app, &monobank_request(&hook, &body)).await;
    assert_eq!((status, first["applied"].as_str()), (200, Some("42.00")));
    let (_, again) = deliver(&app, &monobank_request(&hook, &body)).await;
    assert_eq!(again["duplicate"], true);
    assert_eq!(
        monobank.hits(),
        1,
        "the new key was stored; no second fetch"
    );
    // A forged signature does not make the webhook fetch again within the minute.
    let (status, _) = deliver(&app, &forged(&hook, &body, "1")).await;
    assert_eq!(status, 401);
    assert_eq!(monobank.hits(), 1);
}

#[tokio::test]
async fn a_monobank_success_that_arrives_after_its_reversal_moves_no_money() {
    let (crm, hook, app) = Crm::with_payments(Provider::Monobank).await;
    let inv = crm.open_invoice(dec!(42), "UAH").await;
    for status in ["reversed", "success", "success"] {
        let body = mono("p_late", status, inv.id.as_str());
        let (status, _) = deliver(&app, &monobank_request(&hook, &body)).await;
        assert_eq!(status, 200);
    }
    let after = crm.stored_invoice(inv.id.as_str()).await;
    assert_eq!((after.paid, after.version), (dec!(0), 0));
    assert_eq!(crm.count("payment_event").await, 2);
    let reasons = crm.reasons().await;
    assert_eq!(reasons.len(), 2);
    for reason in ["reversed_before_payment", "reversal_without_payment"] {
        assert!(reasons.contains(&reason.to_owned()), "{reasons:?}");
    }
}

#[tokio::test]
async fn a_success_and_its_reversal_at_once_never_leave_money_booked() {
    let (crm, hook, app) = Crm::with_payments(Provider::Monobank).await;
    for round in 0..50 {
        let inv = crm.open_invoice(dec!(42), "UAH").await;
        let id = format!("p_race_{round}");
        let (success, reversed) = (
            monobank_request(&hook, &mono(&id, "success", inv.id.as_str())),
            monobank_request(&hook, &mono(&id, "reversed", inv.id.as_str())),
        );
        // Alternate which one starts first; both are in flight together.
        let (a, b) = if round % 2 == 0 {
            futures::join!(deliver(&app, &success), deliver(&app, &reversed))
        } else {
            let (b, a) = futures::join!(deliver(&app, &reversed), deliver(&app, &success));
            (a, b)
        };
        assert_eq!((a.0, b.0), (200, 200), "round {round}");
        let after = crm.stored_invoice(inv.id.as_str()).await;
        assert_eq!(
            after.paid,
            dec!(0),
            "round {round}: the money went back, the invoice must not stay paid"
        );
    }
}

#[tokio::test]
async fn forged_signatures_fetch_the_monobank_key_at_most_once_across_cold_functions() {
    let crm = Crm::new().await;
    // monobank answers with the key we already have: the fetch cannot help, and still counts.
    let (hook, monobank) = confirming_merchant(&crm, Vec::new()).await;
    let inv = crm.open_invoice(dec!(42), "UAH").await;
    let body = mono("p_forged", "success", inv.id.as_str());
    // Five cold functions (no shared memory), four forged deliveries each.
    for _ in 0..5 {
        let app = payment_webhook::app_with_monobank_api(crm.store().clone(), &monobank.url());
        for i in 0..4 {
            let (status, _) = deliver(&app, &forged(&hook, &body, &format!("{}", 100 + i))).await;
            assert_eq!(status, 401);
        }
    }
    assert_eq!(monobank.hits(), 1, "one fetch a minute, whatever it found");
    assert_eq!(crm.count("payment_event").await, 0);
}

#[tokio::test]
async fn with_a_token_only_the_merchants_own_confirmed_invoice_books_money() {
    let crm = Crm::new().await;
    let inv = crm.open_invoice(dec!(42), "UAH").await;
    let ours = json!({"invoiceId": "p_ours", "status": "success", "amount": 4200, "finalAmount": 4200, "ccy": 980, "reference": inv.id.as_str()});
    let (hook, monobank) = confirming_merchant(&crm, vec![ours]).await;
    let app = payment_webhook::app_with_monobank_api(crm.store().clone(), &monobank.url());
    let body = |id: &str| mono(id, "success", inv.id.as_str());
    // Genuinely signed by monobank, but another merchant's invoice naming ours as reference.
    let (status, foreign) = deliver(&app, &monobank_request(&hook, &body("p_foreign"))).await;
    assert_eq!(status, 200);
    assert_eq!(
        (foreign["outcome"].as_str(), foreign["applied"].as_str()),
        (Some("unconfirmed"), Some("0.00"))
    );
    assert_eq!(crm.reasons().await, ["unconfirmed_payment"]);
    for applied in ["42.00", "0.00"] {
        let (_, answer) = deliver(&app, &monobank_request(&hook, &body("p_ours"))).await;
        assert_eq!(answer["applied"], applied, "{answer}");
    }
    assert_eq!(crm.stored_invoice(inv.id.as_str()).await.paid, dec!(42));
    assert_eq!(
        monobank.status_hits(),
        2,
        "asked once per new payment, never for a duplicate"
    );
}

#[tokio::test]
async fn when_monobank_cannot_confirm_now_nothing_is_written_and_the_sender_retries() {
    let crm = Crm::new().await;
    let inv = crm.open_invoice(dec!(42), "UAH").await;
    let later = vec![json!({"invoiceId": "p_later", "fail": 502})];
    let (hook, monobank) = confirming_merchant(&crm, later).await;
    let app = payment_webhook::app_with_monobank_api(crm.store().clone(), &monobank.url());
    let body = mono("p_later", "success", inv.id.as_str());
    let before = crm.table_snapshot().await;
    let (status, _) = deliver(&app, &monobank_request(&hook, &body)).await;
    assert_eq!(status, 503);
    assert_eq!(crm.table_snapshot().await, before);
}
