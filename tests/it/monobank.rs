//! monobank acquiring in-process against ministack: statuses, success and reversal in any order,
//! key rotation against a loopback stand-in for monobank's API.

use crate::support::fixtures::{now, NOW};
use crate::support::{fixtures, json_of, TestEnv};
use firmspace::payments::providers::Provider;
use payment_webhook::app;
use rust_decimal_macros::dec;

#[tokio::test]
async fn statuses_before_paid_are_ignored_and_write_nothing() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await;
    let mono = fixtures::integration(&env, &org.id, Provider::Monobank).await;
    let std_hook = fixtures::integration(&env, &org.id, Provider::Standard).await;
    let app = app(env.store.clone());
    let before = env.items().await.len();
    for status in ["created", "processing", "hold", "failure"] {
        let body = format!(
            r#"{{"invoiceId":"p_1","status":"{status}","amount":100,"ccy":980,"reference":"inv_x"}}"#
        );
        let res = app
            .respond(&fixtures::monobank_request(&mono, &body), now())
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        assert_eq!(json_of(&res)["status"], "ignored");
    }
    let body = r#"{"type":"payment.failed","data":{"payment_id":"p"}}"#;
    let res = app
        .respond(&fixtures::standard_request(&std_hook, body, NOW), now())
        .await
        .unwrap();
    assert_eq!(json_of(&res)["status"], "ignored");
    assert_eq!(env.items().await.len(), before);
}

#[tokio::test]
async fn monobank_success_then_reversed_moves_the_balance_there_and_back_once() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await;
    let hook = fixtures::integration(&env, &org.id, Provider::Monobank).await;
    let inv = fixtures::invoice(&env, &org.id, dec!(42), "UAH").await;
    let app = app(env.store.clone());
    let body = |status: &str| {
        format!(
            r#"{{"invoiceId":"p2_9ZgpZVsl3","status":"{status}","amount":4200,"ccy":980,"reference":"{}"}}"#,
            inv.id
        )
    };
    for _ in 0..3 {
        app.respond(&fixtures::monobank_request(&hook, &body("success")), now())
            .await
            .unwrap();
    }
    let paid = firmspace::payments::invoice::get(&env.store, &org.id, inv.id.as_str())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (paid.paid, firmspace::store::item::tag_name(&paid.status)),
        (dec!(42.00), "paid".to_owned())
    );
    for _ in 0..3 {
        let res = app
            .respond(&fixtures::monobank_request(&hook, &body("reversed")), now())
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
    }
    let back = firmspace::payments::invoice::get(&env.store, &org.id, inv.id.as_str())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            back.paid,
            firmspace::store::item::tag_name(&back.status),
            back.version
        ),
        (dec!(0), "open".to_owned(), 2)
    );
    assert_eq!(env.count("payment_event").await, 2);

    let forged = fixtures::monobank_request(&hook, &body("success"));
    let mut forged = forged;
    *forged.body_mut() = body("success").replace("4200", "9999").into();
    let res = app
        .respond(&forged, now())
        .await
        .unwrap_err()
        .into_response();
    assert_eq!(res.status(), 401);
}

#[tokio::test]
async fn a_rotated_monobank_key_is_fetched_once_and_kept() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await;
    let old_key = {
        use base64::Engine;
        use p256::pkcs8::{EncodePublicKey, LineEnding};
        let old = p256::ecdsa::SigningKey::from_slice(&[9u8; 32]).unwrap();
        let pem = old
            .verifying_key()
            .to_public_key_pem(LineEnding::LF)
            .unwrap();
        base64::engine::general_purpose::STANDARD.encode(pem)
    };
    let hook = fixtures::payments_integration(
        &env,
        &org.id,
        firmspace::payments::providers::PaymentSettings::Monobank(
            firmspace::payments::providers::monobank::Merchant {
                public_key: old_key,
                token: Some("merchant-token".to_owned().into()),
                key_fetched_at: None,
            },
        ),
    )
    .await;
    let inv = fixtures::invoice(&env, &org.id, dec!(42), "UAH").await;
    let monobank = crate::support::target::spawn_monobank_with(
        fixtures::monobank_public_key_b64(),
        "merchant-token",
        vec![serde_json::json!({"invoiceId": "p_rot", "status": "success", "amount": 4200, "finalAmount": 4200, "ccy": 980, "reference": inv.id.as_str()})],
    )
    .await;
    let app = payment_webhook::app_with_monobank_api(env.store.clone(), &monobank.url());
    let body = format!(
        r#"{{"invoiceId":"p_rot","status":"success","amount":4200,"ccy":980,"reference":"{}"}}"#,
        inv.id
    );
    let res = app
        .respond(&fixtures::monobank_request(&hook, &body), now())
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(json_of(&res)["applied"], "42.00");
    let again = app
        .respond(&fixtures::monobank_request(&hook, &body), now())
        .await
        .unwrap();
    assert_eq!(json_of(&again)["duplicate"], true);
    assert_eq!(
        monobank.hits(),
        1,
        "the new key was stored; no second fetch"
    );
    // A forged signature does not make the webhook fetch again within the minute.
    let mut forged = fixtures::monobank_request(&hook, &body);
    *forged.body_mut() = body.replace("4200", "1").into();
    let res = app
        .respond(&forged, now())
        .await
        .unwrap_err()
        .into_response();
    assert_eq!(res.status(), 401);
    assert_eq!(monobank.hits(), 1);
}

#[tokio::test]
async fn a_monobank_success_that_arrives_after_its_reversal_moves_no_money() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await;
    let hook = fixtures::integration(&env, &org.id, Provider::Monobank).await;
    let inv = fixtures::invoice(&env, &org.id, dec!(42), "UAH").await;
    let app = app(env.store.clone());
    let body = |status: &str| {
        format!(
            r#"{{"invoiceId":"p_late","status":"{status}","amount":4200,"ccy":980,"reference":"{}"}}"#,
            inv.id
        )
    };
    for status in ["reversed", "success", "success"] {
        let res = app
            .respond(&fixtures::monobank_request(&hook, &body(status)), now())
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
    }
    let after = firmspace::payments::invoice::get(&env.store, &org.id, inv.id.as_str())
        .await
        .unwrap()
        .unwrap();
    assert_eq!((after.paid, after.version), (dec!(0), 0));
    assert_eq!(env.count("payment_event").await, 2);
    let reasons: Vec<_> = firmspace::review::list(&env.store, &org.id, 10)
        .await
        .unwrap()
        .iter()
        .map(|r| r["reason"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(reasons.len(), 2);
    assert!(
        reasons.contains(&"reversed_before_payment".to_owned()),
        "{reasons:?}"
    );
    assert!(
        reasons.contains(&"reversal_without_payment".to_owned()),
        "{reasons:?}"
    );
}

#[tokio::test]
async fn a_success_and_its_reversal_at_once_never_leave_money_booked() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await;
    let hook = fixtures::integration(&env, &org.id, Provider::Monobank).await;
    let app = app(env.store.clone());
    for round in 0..50 {
        let inv = fixtures::invoice(&env, &org.id, dec!(42), "UAH").await;
        let body = |status: &str| {
            format!(
                r#"{{"invoiceId":"p_race_{round}","status":"{status}","amount":4200,"ccy":980,"reference":"{}"}}"#,
                inv.id
            )
        };
        let (success, reversed) = (
            fixtures::monobank_request(&hook, &body("success")),
            fixtures::monobank_request(&hook, &body("reversed")),
        );
        // Alternate which one starts first; both are in flight together.
        let (a, b) = if round % 2 == 0 {
            futures::join!(app.respond(&success, now()), app.respond(&reversed, now()))
        } else {
            let (b, a) =
                futures::join!(app.respond(&reversed, now()), app.respond(&success, now()));
            (a, b)
        };
        assert_eq!(
            (a.unwrap().status().as_u16(), b.unwrap().status().as_u16()),
            (200, 200),
            "round {round}"
        );
        let after = firmspace::payments::invoice::get(&env.store, &org.id, inv.id.as_str())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            after.paid,
            dec!(0),
            "round {round}: the money went back, the invoice must not stay paid"
        );
    }
}

#[tokio::test]
async fn forged_signatures_fetch_the_monobank_key_at_most_once_across_cold_functions() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await;
    // monobank answers with the key we already have: the fetch cannot help, and still counts.
    let (hook, monobank) = confirming_merchant(&env, &org.id, Vec::new()).await;
    let inv = fixtures::invoice(&env, &org.id, dec!(42), "UAH").await;
    let body = format!(
        r#"{{"invoiceId":"p_forged","status":"success","amount":4200,"ccy":980,"reference":"{}"}}"#,
        inv.id
    );
    // Five cold functions (no shared memory), four forged deliveries each.
    for _ in 0..5 {
        let app = payment_webhook::app_with_monobank_api(env.store.clone(), &monobank.url());
        for i in 0..4 {
            let mut forged = fixtures::monobank_request(&hook, &body);
            *forged.body_mut() = body.replace("4200", &format!("{}", 100 + i)).into();
            let res = app
                .respond(&forged, now())
                .await
                .unwrap_err()
                .into_response();
            assert_eq!(res.status(), 401);
        }
    }
    assert_eq!(monobank.hits(), 1, "one fetch a minute, whatever it found");
    assert_eq!(env.count("payment_event").await, 0);
}

/// A merchant with a token, monobank's stand-in knowing `known` as this merchant's invoices.
async fn confirming_merchant(
    env: &TestEnv,
    org: &firmspace::ids::OrgId,
    known: Vec<serde_json::Value>,
) -> (
    firmspace::ids::IntegrationId,
    crate::support::target::MonobankApi,
) {
    let hook = fixtures::payments_integration(
        env,
        org,
        firmspace::payments::providers::PaymentSettings::Monobank(
            firmspace::payments::providers::monobank::Merchant {
                public_key: fixtures::monobank_public_key_b64(),
                token: Some("merchant-token".to_owned().into()),
                key_fetched_at: None,
            },
        ),
    )
    .await;
    let api = crate::support::target::spawn_monobank_with(
        fixtures::monobank_public_key_b64(),
        "merchant-token",
        known,
    )
    .await;
    (hook, api)
}

#[tokio::test]
async fn with_a_token_only_the_merchants_own_confirmed_invoice_books_money() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await;
    let inv = fixtures::invoice(&env, &org.id, dec!(42), "UAH").await;
    let ours = serde_json::json!({"invoiceId": "p_ours", "status": "success", "amount": 4200, "finalAmount": 4200, "ccy": 980, "reference": inv.id.as_str()});
    let (hook, monobank) = confirming_merchant(&env, &org.id, vec![ours]).await;
    let app = payment_webhook::app_with_monobank_api(env.store.clone(), &monobank.url());
    let body = |id: &str| {
        format!(
            r#"{{"invoiceId":"{id}","status":"success","amount":4200,"ccy":980,"reference":"{}"}}"#,
            inv.id
        )
    };
    // Genuinely signed by monobank, but another merchant's invoice naming ours as reference.
    let foreign = app
        .respond(
            &fixtures::monobank_request(&hook, &body("p_foreign")),
            now(),
        )
        .await
        .unwrap();
    assert_eq!(foreign.status(), 200);
    let foreign = json_of(&foreign);
    assert_eq!(
        (foreign["outcome"].as_str(), foreign["applied"].as_str()),
        (Some("unconfirmed"), Some("0.00"))
    );
    let reasons: Vec<String> = firmspace::review::list(&env.store, &org.id, 10)
        .await
        .unwrap()
        .iter()
        .map(|r| r["reason"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(reasons, ["unconfirmed_payment"]);

    for _ in 0..2 {
        let res = app
            .respond(&fixtures::monobank_request(&hook, &body("p_ours")), now())
            .await
            .unwrap();
        assert_eq!(json_of(&res)["applied"], "42.00");
    }
    let after = firmspace::payments::invoice::get(&env.store, &org.id, inv.id.as_str())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(after.paid, dec!(42));
    assert_eq!(
        monobank.status_hits(),
        2,
        "asked once per new payment, never for a duplicate"
    );
}

#[tokio::test]
async fn when_monobank_cannot_confirm_now_nothing_is_written_and_the_sender_retries() {
    let env = TestEnv::new().await;
    let org = fixtures::org(&env).await;
    let inv = fixtures::invoice(&env, &org.id, dec!(42), "UAH").await;
    let (hook, monobank) = confirming_merchant(
        &env,
        &org.id,
        vec![serde_json::json!({"invoiceId": "p_later", "fail": 502})],
    )
    .await;
    let app = payment_webhook::app_with_monobank_api(env.store.clone(), &monobank.url());
    let body = format!(
        r#"{{"invoiceId":"p_later","status":"success","amount":4200,"ccy":980,"reference":"{}"}}"#,
        inv.id
    );
    let before = env.items().await.len();
    let res = app
        .respond(&fixtures::monobank_request(&hook, &body), now())
        .await
        .unwrap_err()
        .into_response();
    assert_eq!(res.status(), 503);
    assert_eq!(env.items().await.len(), before);
}
