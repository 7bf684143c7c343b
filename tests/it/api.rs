//! The `api` function in-process against ministack.

use crate::support::api::{app, call, call_with, new_org};
use crate::support::TestEnv;
use chrono::Utc;
use serde_json::{json, Value};

#[tokio::test]
async fn only_the_admin_token_creates_organisations() {
    let env = TestEnv::new().await;
    let app = app(&env);
    let (status, body) = call(&app, "POST", "/api/orgs", "wrong", json!({"name": "Acme"})).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (401, Some("unauthorized"))
    );
    assert_eq!(env.count("org").await, 0);
    let key = new_org(&app).await;
    assert!(key.starts_with("fsk_"));
    // The key is stored hashed: no item holds it.
    let items = format!("{:?}", env.items().await);
    assert!(!items.contains(&key));
}

#[tokio::test]
async fn integrations_return_their_webhook_url_and_secret() {
    let env = TestEnv::new().await;
    let app = app(&env);
    let key = new_org(&app).await;
    let (status, body) = call(
        &app,
        "POST",
        "/api/integrations",
        &key,
        json!({"kind": "payments", "provider": "standard"}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let id = body["integration_id"].as_str().unwrap();
    assert_eq!(
        body["webhook_url"],
        format!("https://hooks.test/hooks/{id}/payments")
    );
    assert!(body["secret"].as_str().unwrap().starts_with("whsec_"));
    let (status, body) = call(
        &app,
        "POST",
        "/api/integrations",
        &key,
        json!({"kind": "payments", "provider": "monobank"}),
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("missing_public_key"))
    );
    let (status, _) = call(
        &app,
        "POST",
        "/api/integrations",
        &key,
        json!({"kind": "outbound", "url": "http://10.1.2.3/x"}),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(env.count("integration").await, 1);
}

#[tokio::test]
async fn the_manual_button_is_idempotent_per_key() {
    let env = TestEnv::new().await;
    let app = app(&env);
    let key = new_org(&app).await;
    let (_, inv) = call(
        &app,
        "POST",
        "/api/invoices",
        &key,
        json!({"currency": "UAH", "gross": "100.00"}),
    )
    .await;
    assert_eq!(
        (inv["status"].as_str(), inv["open"].as_str()),
        (Some("open"), Some("100.00"))
    );
    let path = format!("/api/invoices/{}/payments", inv["id"].as_str().unwrap());
    let auth = format!("Bearer {key}");
    let pay = |idem: &'static str, amount: &'static str| {
        let (app, path, auth) = (&app, path.clone(), auth.clone());
        async move {
            call_with(
                app,
                "POST",
                &path,
                &[("authorization", &auth), ("idempotency-key", idem)],
                json!({"source": "manual", "amount": amount}),
            )
            .await
        }
    };
    let (status, first) = pay("click-1", "40.00").await;
    assert_eq!(
        (
            status,
            first["duplicate"].as_bool(),
            first["applied"].as_str()
        ),
        (200, Some(false), Some("40.00"))
    );
    let (status, again) = pay("click-1", "40.00").await;
    assert_eq!((status, again["duplicate"].as_bool()), (200, Some(true)));
    assert_eq!(again["invoice"], first["invoice"], "the stored answer");
    let (status, other) = pay("click-1", "50.00").await;
    assert_eq!(
        (status, other["error"].as_str()),
        (409, Some("idempotency_key_reused"))
    );
    let (status, missing) = call(&app, "POST", &path, &key, json!({"source": "manual"})).await;
    assert_eq!(
        (status, missing["error"].as_str()),
        (400, Some("missing_idempotency_key"))
    );
    let (status, rest) = call_with(
        &app,
        "POST",
        &path,
        &[("authorization", &auth), ("idempotency-key", "assist-1")],
        json!({"source": "assistant"}),
    )
    .await;
    assert_eq!((status, rest["applied"].as_str()), (200, Some("60.00")));

    let (_, read) = call(
        &app,
        "GET",
        &format!("/api/invoices/{}", inv["id"].as_str().unwrap()),
        &key,
        Value::Null,
    )
    .await;
    assert_eq!(
        (read["paid"].as_str(), read["status"].as_str()),
        (Some("100.00"), Some("paid"))
    );
    let payments = read["payments"].as_array().unwrap();
    assert_eq!(payments.len(), 2);
    assert_eq!(payments[0]["source"], "manual");
    assert_eq!(payments[0]["external_id"], "click-1");
    assert_eq!(env.count("payment_event").await, 2);
}

#[tokio::test]
async fn duplicating_an_invoice_makes_a_new_draft_with_a_new_number() {
    let env = TestEnv::new().await;
    let app = app(&env);
    let key = new_org(&app).await;
    let (_, inv) = call(
        &app,
        "POST",
        "/api/invoices",
        &key,
        json!({"currency": "EUR", "gross": "12.50", "contact_id": "c1"}),
    )
    .await;
    let (status, copy) = call(
        &app,
        "POST",
        &format!("/api/invoices/{}/duplicate", inv["id"].as_str().unwrap()),
        &key,
        Value::Null,
    )
    .await;
    assert_eq!(status, 201);
    assert_ne!(copy["id"], inv["id"]);
    assert_eq!(
        (copy["number"].as_str(), inv["number"].as_str()),
        (Some("INV-00002"), Some("INV-00001"))
    );
    assert_eq!(
        (
            copy["status"].as_str(),
            copy["gross"].as_str(),
            copy["contact_id"].as_str()
        ),
        (Some("draft"), Some("12.50"), Some("c1"))
    );
    assert_eq!(env.count("invoice").await, 2);
    let (status, all) = call(&app, "GET", "/api/invoices", &key, Value::Null).await;
    assert_eq!(status, 200);
    let numbers: Vec<_> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["number"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(numbers, ["INV-00002", "INV-00001"], "newest first");
}

#[tokio::test]
async fn one_organisations_key_never_reaches_another_organisations_data() {
    let env = TestEnv::new().await;
    let app = app(&env);
    let alice = new_org(&app).await;
    let bob = new_org(&app).await;
    let (_, inv) = call(
        &app,
        "POST",
        "/api/invoices",
        &alice,
        json!({"currency": "UAH", "gross": "10.00"}),
    )
    .await;
    let path = format!("/api/invoices/{}", inv["id"].as_str().unwrap());
    assert_eq!(call(&app, "GET", &path, &alice, Value::Null).await.0, 200);
    assert_eq!(call(&app, "GET", &path, &bob, Value::Null).await.0, 404);
    let (status, _) = call_with(
        &app,
        "POST",
        &format!("{path}/payments"),
        &[
            ("authorization", &format!("Bearer {bob}")),
            ("idempotency-key", "x"),
        ],
        json!({"source": "manual"}),
    )
    .await;
    assert_eq!(status, 404);
    // A forged key naming alice's organisation is refused.
    let forged = format!("{}_forged", &alice[..17]);
    assert_eq!(call(&app, "GET", &path, &forged, Value::Null).await.0, 401);
    assert_eq!(env.count("payment_event").await, 0);
}

#[tokio::test]
async fn bad_input_names_the_problem_and_writes_nothing() {
    let env = TestEnv::new().await;
    let app = app(&env);
    let key = new_org(&app).await;
    let before = env.items().await.len();
    for (body, code) in [
        (json!({"currency": "UAH", "gross": "-5"}), "invalid_gross"),
        (json!({"currency": "U1", "gross": "5"}), "invalid_currency"),
        (json!({"gross": "5"}), "malformed"),
    ] {
        let (status, answer) = call(&app, "POST", "/api/invoices", &key, body).await;
        assert_eq!((status, answer["error"].as_str()), (400, Some(code)));
    }
    assert_eq!(env.items().await.len(), before);
    let _ = Utc::now();
}

#[tokio::test]
async fn the_review_list_shows_what_needs_a_person() {
    let env = TestEnv::new().await;
    let app = app(&env);
    let key = new_org(&app).await;
    let (_, inv) = call(
        &app,
        "POST",
        "/api/invoices",
        &key,
        json!({"currency": "UAH", "gross": "10.00"}),
    )
    .await;
    let path = format!("/api/invoices/{}/payments", inv["id"].as_str().unwrap());
    call_with(
        &app,
        "POST",
        &path,
        &[
            ("authorization", &format!("Bearer {key}")),
            ("idempotency-key", "over"),
        ],
        json!({"source": "manual", "amount": "15.00"}),
    )
    .await;
    let (status, review) = call(&app, "GET", "/api/review", &key, Value::Null).await;
    assert_eq!(status, 200);
    let items = review["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(
        (items[0]["kind"].as_str(), items[0]["reason"].as_str()),
        (Some("payment"), Some("overpayment"))
    );
    assert_eq!(items[0]["key"], "payment:manual:over");
}
