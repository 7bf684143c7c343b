//! The webhook edge in-process against ministack: what is kept, what is keyed how, and what the
//! integration cache reads.

use crate::support::app::{deliver, deliver_at, Crm};
use crate::support::fixtures::{self, now, standard_request, NOW};
use firmspace::ids::IntegrationId;
use firmspace::integrations::{Integration, Settings};
use firmspace::payments::providers::{PaymentSettings, Provider};
use payment_webhook::app;
use rust_decimal_macros::dec;

#[tokio::test]
async fn a_signed_body_that_cannot_be_read_is_kept_with_a_review_item_and_answered_200() {
    let (crm, hook, app) = Crm::with_payments(Provider::Standard).await;
    let unreadable = r#"{"type":"payment.succeeded","data":{"payment_id":"p_bad","amount":12}}"#;
    let mut answers = Vec::new();
    for _ in 0..2 {
        let (status, answer) = deliver(&app, &standard_request(&hook, unreadable, NOW)).await;
        assert_eq!(status, 200, "retrying cannot help the sender");
        answers.push(answer);
    }
    assert_eq!(answers[0]["status"], "unparseable");
    assert_eq!(
        (
            answers[0]["duplicate"].as_bool(),
            answers[1]["duplicate"].as_bool()
        ),
        (Some(false), Some(true))
    );
    assert_eq!(crm.count("unparseable_delivery").await, 1, "kept once, raw");
    assert_eq!(crm.count("payment_event").await, 0);
    assert_eq!(crm.reasons().await, ["unparseable_payload"]);
    let kept = crm
        .table_snapshot()
        .await
        .into_iter()
        .find(|i| i["kind"].as_s().is_ok_and(|k| k == "unparseable_delivery"))
        .unwrap();
    assert_eq!(
        kept["body"].as_b().unwrap().as_ref(),
        unreadable.as_bytes(),
        "the body exactly as it came"
    );
    // Kept for a quarter (the table's TTL), while its review item stays.
    let expires: i64 = kept["expires_at"].as_n().unwrap().parse().unwrap();
    let at = firmspace::time::parse(kept["at"].as_s().unwrap()).unwrap();
    assert_eq!(expires, (at + chrono::Duration::days(90)).timestamp());
}

#[tokio::test]
async fn the_same_key_with_another_amount_gets_the_stored_answer_and_a_payload_mismatch_review() {
    let (crm, hook, app) = Crm::with_payments(Provider::Standard).await;
    let inv = crm.open_invoice(dec!(100), "UAH").await;
    let first = fixtures::standard_body("pay_mm", inv.id.as_str(), Some("40.00"));
    let other = fixtures::standard_body("pay_mm", inv.id.as_str(), Some("90.00"));
    let (status, booked) = deliver(&app, &standard_request(&hook, &first, NOW)).await;
    assert_eq!(status, 200, "{booked}");
    for _ in 0..2 {
        let (status, answer) = deliver(&app, &standard_request(&hook, &other, NOW)).await;
        assert_eq!(status, 200, "the sender stops retrying");
        assert_eq!(
            (
                answer["duplicate"].as_bool(),
                answer["applied"].as_str(),
                answer["first_applied"].as_str()
            ),
            (Some(true), Some("0.00"), Some("40.00"))
        );
        assert_eq!(answer["invoice"], booked["invoice"]);
    }
    let after = crm.stored_invoice(inv.id.as_str()).await;
    assert_eq!((after.paid, after.version), (dec!(40.00), 1));
    assert_eq!(
        crm.reasons().await,
        ["payload_mismatch"],
        "one item, however often it comes"
    );
}

const OLD_SECRET: &str = "whsec_b2xkIHNlY3JldCBvZiB0d2VudHktZm91ciBieXRlcw==";

/// The integration's secret replaced in the store by the fixtures' own.
async fn rotate(crm: &Crm, hook: &IntegrationId) {
    let rotated = Integration {
        id: IntegrationId::parse(&hook.id).unwrap(),
        settings: Settings::Payments(PaymentSettings::Standard {
            secret: fixtures::STANDARD_SECRET.to_owned().into(),
        }),
        created_at: chrono::Utc::now(),
    };
    firmspace::integrations::replace(crm.store(), &rotated)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_rotated_secret_works_at_once_and_forged_requests_do_not_become_reads() {
    let crm = Crm::new().await;
    let old = PaymentSettings::Standard {
        secret: OLD_SECRET.to_owned().into(),
    };
    let hook = fixtures::payments_integration(&crm.env, &crm.org, old).await;
    let inv = crm.open_invoice(dec!(100), "UAH").await;
    let app = app(crm.store().clone());
    let body = fixtures::standard_body("pay_rot", inv.id.as_str(), Some("10.00"));
    // The first delivery, signed with the old secret, loads and caches the integration.
    let old_sig =
        firmspace::signature::standard::sign(OLD_SECRET, "msg_1", NOW, body.as_bytes()).unwrap();
    let mut req = standard_request(&hook, &body, NOW);
    req.headers_mut()
        .insert("webhook-signature", old_sig.parse().unwrap());
    assert_eq!(deliver(&app, &req).await.0, 200);
    // The secret is rotated in the store: the next delivery is signed with the new one.
    rotate(&crm, &hook).await;
    crm.env.calls.clear();
    let rotated = fixtures::standard_body("pay_rot2", inv.id.as_str(), Some("10.00"));
    let (status, answer) = deliver(&app, &standard_request(&hook, &rotated, NOW)).await;
    assert_eq!(status, 200, "{answer}");
    let reads = crm.env.calls.take();
    assert_eq!(
        reads.iter().filter(|c| *c == "GetItem").count(),
        1,
        "one re-read"
    );
    // A stream of forged requests within the next seconds re-reads nothing.
    for i in 0..20 {
        let mut forged = standard_request(&hook, &rotated, NOW);
        let signature = format!("v1,Zm9yZ2VkIHNpZ25hdHVyZSB7aX0={i}");
        forged
            .headers_mut()
            .insert("webhook-signature", signature.parse().unwrap());
        let later = now() + chrono::Duration::seconds(1);
        assert_eq!(deliver_at(&app, &forged, later).await.0, 401);
    }
    // (Their budget apart is counted: a few `UpdateItem`s of its counter, no read.)
    let calls = crm.env.calls.take();
    assert!(
        calls.iter().all(|c| c == "UpdateItem"),
        "forged requests against a fresh copy read nothing: {calls:?}"
    );
}

#[tokio::test]
async fn standard_payments_are_keyed_by_integration_and_by_webhook_id_when_they_carry_no_payment_id(
) {
    let crm = Crm::new().await;
    let one = crm.hook(Provider::Standard).await;
    let two = crm.hook(Provider::Standard).await;
    let inv = crm.open_invoice(dec!(100), "UAH").await;
    let app = app(crm.store().clone());
    // Two senders in one organisation that both say pay_1: two payments.
    let body = fixtures::standard_body("pay_1", inv.id.as_str(), Some("10.00"));
    for hook in [&one, &two] {
        let (status, answer) = deliver(&app, &standard_request(hook, &body, NOW)).await;
        assert_eq!((status, answer["duplicate"].as_bool()), (200, Some(false)));
    }
    // No payment_id: the signed webhook-id is the key, however the sender serialises the body.
    let id = inv.id.as_str();
    let a =
        format!(r#"{{"type":"payment.succeeded","data":{{"invoice_id":"{id}","amount":"5.00"}}}}"#);
    let b =
        format!(r#"{{"data":{{"amount":"5.00","invoice_id":"{id}"}},"type":"payment.succeeded"}}"#);
    let mut duplicates = Vec::new();
    for (body, webhook_id) in [(&a, "msg_77"), (&b, "msg_77"), (&a, "msg_78")] {
        let req = fixtures::standard_request_with_id(&one, body, NOW, webhook_id);
        let (status, answer) = deliver(&app, &req).await;
        assert_eq!(status, 200, "{answer}");
        duplicates.push(answer["duplicate"].as_bool().unwrap());
    }
    assert_eq!(
        duplicates,
        [false, true, false],
        "msg_77 twice is one payment; msg_78 is another"
    );
    assert_eq!(crm.stored_invoice(id).await.paid, dec!(30.00));
    assert_eq!(crm.count("payment_event").await, 4);
}

#[tokio::test]
async fn two_stripe_endpoints_of_one_account_book_an_intent_once() {
    let crm = Crm::new().await;
    let inv = crm.open_invoice(dec!(100), "UAH").await;
    let app = app(crm.store().clone());
    let body = fixtures::stripe_body("evt_9", "pi_shared", 2500, inv.id.as_str());
    let mut duplicates = Vec::new();
    for _ in 0..2 {
        let hook = crm.hook(Provider::Stripe).await;
        let req = fixtures::stripe_request(&hook, &body, NOW);
        let (status, answer) = deliver(&app, &req).await;
        assert_eq!(status, 200, "{answer}");
        duplicates.push(answer["duplicate"].as_bool().unwrap());
    }
    assert_eq!(duplicates, [false, true]);
    assert_eq!(crm.count("payment_event").await, 1);
}

#[tokio::test]
async fn a_negative_stripe_amount_is_told_in_stripes_terms() {
    let (crm, hook, app) = Crm::with_payments(Provider::Stripe).await;
    let inv = crm.open_invoice(dec!(100), "UAH").await;
    let body =
        serde_json::json!({"id": "evt_neg", "type": "payment_intent.succeeded", "created": NOW,
        "data": {"object": {"id": "pi_neg", "amount_received": -4000, "currency": "uah",
                            "metadata": {"invoice_id": inv.id.as_str()}}}})
        .to_string();
    let (status, answer) = deliver(&app, &fixtures::stripe_request(&hook, &body, NOW)).await;
    assert_eq!(
        (status, answer["status"].as_str()),
        (200, Some("unparseable")),
        "{answer}"
    );
    let detail = answer["detail"].as_str().unwrap();
    assert!(
        detail.contains("positive integer of minor units"),
        "{detail}"
    );
    assert!(!detail.contains("decimal"), "{detail}");
    assert_eq!(crm.count("payment_event").await, 0);
}
