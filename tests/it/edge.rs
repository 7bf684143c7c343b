//! The webhook edge in-process against ministack: what is kept, what is keyed how, and what the
//! integration cache reads.

use crate::support::fixtures::{now, NOW};
use crate::support::{fixtures, json_of, TestEnv};
use firmspace::ids::IntegrationId;
use firmspace::payments::providers::Provider;
use payment_webhook::app;
use rust_decimal_macros::dec;

#[tokio::test]
async fn a_signed_body_that_cannot_be_read_is_kept_with_a_review_item_and_answered_200() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await;
    let hook = fixtures::integration(&env, &org.id, Provider::Standard).await;
    let app = app(env.store.clone());
    let unreadable = r#"{"type":"payment.succeeded","data":{"payment_id":"p_bad","amount":12}}"#;
    let mut answers = Vec::new();
    for _ in 0..2 {
        let res = app
            .respond(&fixtures::standard_request(&hook, unreadable, NOW), now())
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "retrying cannot help the sender");
        answers.push(json_of(&res));
    }
    assert_eq!(answers[0]["status"], "unparseable");
    assert_eq!(
        (
            answers[0]["duplicate"].as_bool(),
            answers[1]["duplicate"].as_bool()
        ),
        (Some(false), Some(true))
    );
    assert_eq!(env.count("unparseable_delivery").await, 1, "kept once, raw");
    assert_eq!(env.count("payment_event").await, 0);
    let review = firmspace::review::list(&env.store, &org.id, 10)
        .await
        .unwrap();
    assert_eq!(
        (review.len(), review[0]["reason"].as_str()),
        (1, Some("unparseable_payload"))
    );
    let kept = env
        .items()
        .await
        .into_iter()
        .find(|i| i["kind"].as_s().is_ok_and(|k| k == "unparseable_delivery"))
        .unwrap();
    assert_eq!(
        kept["body"].as_b().unwrap().as_ref(),
        unreadable.as_bytes(),
        "the body exactly as it came"
    );
}

#[tokio::test]
async fn the_same_key_with_another_amount_gets_the_stored_answer_and_a_payload_mismatch_review() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await;
    let hook = fixtures::integration(&env, &org.id, Provider::Standard).await;
    let inv = fixtures::invoice(&env, &org.id, dec!(100), "UAH").await;
    let app = app(env.store.clone());
    let first = fixtures::standard_body("pay_mm", inv.id.as_str(), Some("40.00"));
    let other = fixtures::standard_body("pay_mm", inv.id.as_str(), Some("90.00"));
    let booked = json_of(
        &app.respond(&fixtures::standard_request(&hook, &first, NOW), now())
            .await
            .unwrap(),
    );
    for _ in 0..2 {
        let res = app
            .respond(&fixtures::standard_request(&hook, &other, NOW), now())
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "the sender stops retrying");
        let answer = json_of(&res);
        assert_eq!(
            (answer["duplicate"].as_bool(), answer["applied"].as_str()),
            (Some(true), Some("40.00"))
        );
        assert_eq!(answer["invoice"], booked["invoice"]);
    }
    let after = firmspace::payments::invoice::get(&env.store, &org.id, inv.id.as_str())
        .await
        .unwrap()
        .unwrap();
    assert_eq!((after.paid, after.version), (dec!(40.00), 1));
    let review = firmspace::review::list(&env.store, &org.id, 10)
        .await
        .unwrap();
    assert_eq!(
        (review.len(), review[0]["reason"].as_str()),
        (1, Some("payload_mismatch")),
        "one item, however often it comes"
    );
}

#[tokio::test]
async fn a_rotated_secret_works_at_once_and_forged_requests_do_not_become_reads() {
    use firmspace::payments::providers::PaymentSettings;
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await;
    let old = PaymentSettings::Standard {
        secret: "whsec_b2xkIHNlY3JldCBvZiB0d2VudHktZm91ciBieXRlcw=="
            .to_owned()
            .into(),
    };
    let hook = fixtures::payments_integration(&env, &org.id, old).await;
    let inv = fixtures::invoice(&env, &org.id, dec!(100), "UAH").await;
    let app = app(env.store.clone());
    let body = fixtures::standard_body("pay_rot", inv.id.as_str(), Some("10.00"));
    // The first delivery, signed with the old secret, loads and caches the integration.
    let old_sig = firmspace::signature::standard::sign(
        "whsec_b2xkIHNlY3JldCBvZiB0d2VudHktZm91ciBieXRlcw==",
        "msg_1",
        NOW,
        body.as_bytes(),
    )
    .unwrap();
    let mut req = fixtures::standard_request(&hook, &body, NOW);
    req.headers_mut()
        .insert("webhook-signature", old_sig.parse().unwrap());
    assert_eq!(app.respond(&req, now()).await.unwrap().status(), 200);
    // The secret is rotated in the store: the next delivery is signed with the new one.
    firmspace::integrations::replace(
        &env.store,
        &firmspace::integrations::Integration {
            id: IntegrationId::parse(&hook.id).unwrap(),
            settings: firmspace::integrations::Settings::Payments(PaymentSettings::Standard {
                secret: fixtures::STANDARD_SECRET.to_owned().into(),
            }),
            created_at: chrono::Utc::now(),
        },
    )
    .await
    .unwrap();
    env.calls.clear();
    let rotated = fixtures::standard_body("pay_rot2", inv.id.as_str(), Some("10.00"));
    let res = app
        .respond(&fixtures::standard_request(&hook, &rotated, NOW), now())
        .await
        .unwrap();
    assert_eq!(res.status(), 200, "{}", json_of(&res));
    assert_eq!(
        env.calls.take().iter().filter(|c| *c == "GetItem").count(),
        1,
        "one re-read"
    );
    // A stream of forged requests within the next seconds re-reads nothing.
    for i in 0..20 {
        let mut forged = fixtures::standard_request(&hook, &rotated, NOW);
        forged.headers_mut().insert(
            "webhook-signature",
            format!("v1,Zm9yZ2VkIHNpZ25hdHVyZSB7aX0={i}")
                .parse()
                .unwrap(),
        );
        let res = app
            .respond(&forged, now() + chrono::Duration::seconds(1))
            .await
            .unwrap_err()
            .into_response();
        assert_eq!(res.status(), 401);
    }
    assert!(
        env.calls.take().is_empty(),
        "forged requests against a fresh copy read nothing"
    );
}

#[tokio::test]
async fn standard_payments_are_keyed_by_integration_and_by_webhook_id_when_they_carry_no_payment_id(
) {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await;
    let one = fixtures::integration(&env, &org.id, Provider::Standard).await;
    let two = fixtures::integration(&env, &org.id, Provider::Standard).await;
    let inv = fixtures::invoice(&env, &org.id, dec!(100), "UAH").await;
    let app = app(env.store.clone());
    // Two senders in one organisation that both say pay_1: two payments.
    let body = fixtures::standard_body("pay_1", inv.id.as_str(), Some("10.00"));
    for hook in [&one, &two] {
        let res = app
            .respond(&fixtures::standard_request(hook, &body, NOW), now())
            .await
            .unwrap();
        assert_eq!(json_of(&res)["duplicate"], false);
    }
    // No payment_id: the signed webhook-id is the key, however the sender serialises the body.
    let a = format!(
        r#"{{"type":"payment.succeeded","data":{{"invoice_id":"{}","amount":"5.00"}}}}"#,
        inv.id
    );
    let b = format!(
        r#"{{"data":{{"amount":"5.00","invoice_id":"{}"}},"type":"payment.succeeded"}}"#,
        inv.id
    );
    let answers: Vec<_> = [(&a, "msg_77"), (&b, "msg_77"), (&a, "msg_78")]
        .into_iter()
        .map(|(body, id)| fixtures::standard_request_with_id(&one, body, NOW, id))
        .collect();
    let mut duplicates = Vec::new();
    for req in answers {
        duplicates.push(
            json_of(&app.respond(&req, now()).await.unwrap())["duplicate"]
                .as_bool()
                .unwrap(),
        );
    }
    assert_eq!(
        duplicates,
        [false, true, false],
        "msg_77 twice is one payment; msg_78 is another"
    );
    let after = firmspace::payments::invoice::get(&env.store, &org.id, inv.id.as_str())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(after.paid, dec!(30.00));
    assert_eq!(env.count("payment_event").await, 4);
}

#[tokio::test]
async fn two_stripe_endpoints_of_one_account_book_an_intent_once() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await;
    let inv = fixtures::invoice(&env, &org.id, dec!(100), "UAH").await;
    let app = app(env.store.clone());
    let body = serde_json::json!({"id": "evt_9", "type": "payment_intent.succeeded", "created": NOW,
        "data": {"object": {"id": "pi_shared", "amount_received": 2500, "currency": "uah", "metadata": {"invoice_id": inv.id.as_str()}}}}).to_string();
    let mut duplicates = Vec::new();
    for _ in 0..2 {
        let hook = fixtures::integration(&env, &org.id, Provider::Stripe).await;
        let res = app
            .respond(&fixtures::stripe_request(&hook, &body, NOW), now())
            .await
            .unwrap();
        duplicates.push(json_of(&res)["duplicate"].as_bool().unwrap());
    }
    assert_eq!(duplicates, [false, true]);
    assert_eq!(env.count("payment_event").await, 1);
}
