//! The `api` function in-process against ministack.

use crate::support::api::{app, call, new_org};
use crate::support::app::Crm;
use crate::support::TestEnv;
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

/// An id longer than the document allows names nothing: 404, never a server error.
#[tokio::test]
async fn an_id_longer_than_the_document_allows_is_not_found() {
    let env = TestEnv::new().await;
    let app = app(&env);
    let key = new_org(&app).await;
    let long = "0".repeat(api::PATH_ID_MAX + 1);
    for path in [
        format!("/api/assistant/calls/{long}"),
        format!("/api/conversations/{long}/messages"),
    ] {
        let (status, body) = call(&app, "GET", &path, &key, Value::Null).await;
        assert_eq!(
            (status, body["error"].as_str()),
            (404, Some("not_found")),
            "{body}"
        );
    }
}

/// What reaches the api through the gateway's `$default` route with a method its path does not
/// take: 405, never a 404 (the operator's page is routed for `GET` alone, a webhook URL for
/// `POST`).
#[tokio::test]
async fn another_method_on_the_page_or_a_webhook_url_is_405() {
    let env = TestEnv::new().await;
    let app = app(&env);
    for (method, path) in [("TRACE", "/ops"), ("GET", "/hooks/org_x/payments")] {
        let (status, body) = call(&app, method, path, "any", Value::Null).await;
        assert_eq!(
            (status, body["error"].as_str()),
            (405, Some("method_not_allowed")),
            "{method} {path}: {body}"
        );
    }
}

/// A failure of ours (here: a table that is not there) answers a problem that says nothing
/// internal: no table, no item key, no SDK's words; the cause goes to the log alone.
#[tokio::test]
async fn a_failure_of_ours_answers_nothing_internal() {
    let env = TestEnv::new().await;
    let key = new_org(&app(&env)).await;
    let missing = format!("{}-gone", env.store.table());
    let client = aws_sdk_dynamodb::Client::new(&crate::support::sdk_config().await);
    let store = firmspace::store::Store::new(client, &missing);
    let app = api::App::new(store, crate::support::api::settings());
    let admin = crate::support::api::ADMIN;
    for (method, path, token) in [
        ("GET", "/api/invoices", key.as_str()),
        ("POST", "/api/orgs", admin),
    ] {
        let body = json!({"name": "Acme"});
        let (status, answer) = call(&app, method, path, token, body).await;
        let shown = answer.to_string();
        assert!(
            matches!(status, 500 | 503),
            "{method} {path}: {status} {shown}"
        );
        for internal in [
            missing.as_str(),
            "ResourceNotFound",
            "ORG#",
            "dynamodb",
            "Dynamo",
        ] {
            assert!(!shown.contains(internal), "{internal} in {shown}");
        }
        assert!(
            ["internal error", "temporarily unavailable; retry later"]
                .contains(&answer["detail"].as_str().unwrap_or_default()),
            "{shown}"
        );
    }
}

#[tokio::test]
async fn integrations_return_their_webhook_url_and_secret() {
    let crm = Crm::new().await;
    let standard = json!({"kind": "payments", "provider": "standard"});
    let body = crm.integration(standard).await;
    let id = body["integration_id"].as_str().unwrap();
    assert_eq!(
        body["webhook_url"],
        format!("https://hooks.test/hooks/{id}/payments")
    );
    assert!(body["secret"].as_str().unwrap().starts_with("whsec_"));
    let monobank = json!({"kind": "payments", "provider": "monobank"});
    crm.expect_error(
        "POST",
        "/api/integrations",
        monobank,
        400,
        "missing_public_key",
    )
    .await;
    let private = json!({"kind": "outbound", "url": "http://10.1.2.3/x"});
    crm.expect_status("POST", "/api/integrations", private, 400)
        .await;
    assert_eq!(crm.count("integration").await, 1);
}

/// An open invoice of 100.00 UAH made through the API; its id.
async fn hundred(crm: &Crm) -> String {
    let inv = crm
        .invoice(json!({"currency": "UAH", "gross": "100.00"}))
        .await;
    assert_eq!(
        (inv["status"].as_str(), inv["open"].as_str()),
        (Some("open"), Some("100.00"))
    );
    inv["id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn the_same_key_under_another_source_is_a_reused_key_not_a_second_payment() {
    let crm = Crm::new().await;
    let id = hundred(&crm).await;
    let (status, first) = crm
        .pay(
            &id,
            "click-src",
            json!({"source": "manual", "amount": "40.00"}),
        )
        .await;
    assert_eq!((status, first["applied"].as_str()), (200, Some("40.00")));
    let (status, other) = crm
        .pay(
            &id,
            "click-src",
            json!({"source": "assistant", "amount": "40.00"}),
        )
        .await;
    assert_eq!(
        (status, other["error"].as_str()),
        (409, Some("idempotency_key_reused")),
        "{other}"
    );
    // A key an approval books under is no client's.
    let (status, refused) = crm
        .pay(
            &id,
            "review-0123456789abcdef",
            json!({"source": "assistant"}),
        )
        .await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("invalid_idempotency_key")),
        "{refused}"
    );
    // And at once: of two sources under one key, one books.
    let copies = ["manual", "assistant"].map(|source| {
        crm.pay(
            &id,
            "click-both",
            json!({"source": source, "amount": "10.00"}),
        )
    });
    let answers = futures::future::join_all(copies).await;
    let statuses: Vec<u16> = answers.iter().map(|(s, _)| *s).collect();
    assert!(
        statuses.contains(&200) && statuses.contains(&409),
        "{answers:?}"
    );
    let read = crm.get(&format!("/api/invoices/{id}")).await;
    assert_eq!(
        (
            read["paid"].as_str(),
            read["payments"].as_array().unwrap().len()
        ),
        (Some("50.00"), 2),
        "{read}"
    );
}

#[tokio::test]
async fn the_manual_button_is_idempotent_per_key() {
    let crm = Crm::new().await;
    let id = hundred(&crm).await;
    let manual = |amount: &str| json!({"source": "manual", "amount": amount});
    let (status, first) = crm.pay(&id, "click-1", manual("40.00")).await;
    assert_eq!(
        (
            status,
            first["duplicate"].as_bool(),
            first["applied"].as_str()
        ),
        (200, Some(false), Some("40.00"))
    );
    let (status, again) = crm.pay(&id, "click-1", manual("40.00")).await;
    assert_eq!((status, again["duplicate"].as_bool()), (200, Some(true)));
    assert_eq!(again["invoice"], first["invoice"], "the stored answer");
    let (status, other) = crm.pay(&id, "click-1", manual("50.00")).await;
    assert_eq!(
        (status, other["error"].as_str()),
        (409, Some("idempotency_key_reused"))
    );
    let path = format!("/api/invoices/{id}/payments");
    crm.expect_error(
        "POST",
        &path,
        json!({"source": "manual"}),
        400,
        "missing_idempotency_key",
    )
    .await;
    let (status, rest) = crm
        .pay(&id, "assist-1", json!({"source": "assistant"}))
        .await;
    assert_eq!((status, rest["applied"].as_str()), (200, Some("60.00")));
    let (status, late) = crm.pay(&id, "click-1", manual("40.00")).await;
    assert_eq!(
        (
            status,
            late["applied"].as_str(),
            late["first_applied"].as_str(),
            late["invoice"]["status"].as_str()
        ),
        (200, Some("0.00"), Some("40.00"), Some("paid")),
        "a late repeat applies nothing and shows the invoice as it is now: {late}"
    );
    the_invoice_is_paid_by_two_payments(&crm, &id).await;
}

async fn the_invoice_is_paid_by_two_payments(crm: &Crm, id: &str) {
    let read = crm.get(&format!("/api/invoices/{id}")).await;
    assert_eq!(
        (read["paid"].as_str(), read["status"].as_str()),
        (Some("100.00"), Some("paid"))
    );
    let payments = read["payments"].as_array().unwrap();
    assert_eq!(payments.len(), 2);
    assert_eq!(payments[0]["source"], "manual");
    assert_eq!(payments[0]["external_id"], "click-1");
    assert_eq!(crm.count("payment_event").await, 2);
}

#[tokio::test]
async fn duplicating_an_invoice_makes_a_new_draft_with_a_new_number() {
    let crm = Crm::new().await;
    let inv = crm
        .invoice(json!({"currency": "EUR", "gross": "12.50", "contact_id": "c1"}))
        .await;
    let path = format!("/api/invoices/{}/duplicate", inv["id"].as_str().unwrap());
    let copy = crm.expect_status("POST", &path, Value::Null, 201).await;
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
    assert_eq!(crm.count("invoice").await, 2);
    let all = crm.get("/api/invoices").await;
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
    let crm = Crm::new().await;
    let bob = crm.another_org().await;
    let inv = crm
        .invoice(json!({"currency": "UAH", "gross": "10.00"}))
        .await;
    let id = inv["id"].as_str().unwrap();
    let path = format!("/api/invoices/{id}");
    crm.get(&path).await;
    assert_eq!(crm.call_as(&bob, "GET", &path, Value::Null).await.0, 404);
    let (status, _) = crm.pay_as(&bob, id, "x", json!({"source": "manual"})).await;
    assert_eq!(status, 404);
    // A forged key naming alice's organisation is refused.
    let forged = format!("{}_forged", &crm.key[..17]);
    assert_eq!(crm.call_as(&forged, "GET", &path, Value::Null).await.0, 401);
    assert_eq!(crm.count("payment_event").await, 0);
}

#[tokio::test]
async fn bad_input_names_the_problem_and_writes_nothing() {
    let crm = Crm::new().await;
    let before = crm.table_snapshot().await;
    for (body, code) in [
        (json!({"currency": "UAH", "gross": "-5"}), "invalid_gross"),
        (json!({"currency": "U1", "gross": "5"}), "invalid_currency"),
        (json!({"gross": "5"}), "malformed"),
    ] {
        crm.expect_error("POST", "/api/invoices", body, 400, code)
            .await;
    }
    assert_eq!(crm.table_snapshot().await, before);
}

#[tokio::test]
async fn the_review_list_shows_what_needs_a_person() {
    let crm = Crm::new().await;
    let ten = json!({"currency": "UAH", "gross": "10.00"});
    let inv = crm.invoice(ten).await;
    let over = json!({"source": "manual", "amount": "15.00"});
    crm.pay(inv["id"].as_str().unwrap(), "over", over).await;
    let review = crm.get("/api/review").await;
    let items = review["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(
        (items[0]["kind"].as_str(), items[0]["reason"].as_str()),
        (Some("payment"), Some("overpayment"))
    );
    assert_eq!(items[0]["key"], "payment:manual:over");
}

#[tokio::test]
async fn a_manual_payment_is_booked_by_the_key_that_asked_whatever_the_body_says() {
    use firmspace::store::item::Read;
    let crm = Crm::new().await;
    let id = hundred(&crm).await;
    let body = json!({"source": "manual", "amount": "10.00", "actor": "admin"});
    let (status, _) = crm.pay(&id, "click-actor", body).await;
    assert_eq!(status, 200);
    let (status, _) = crm
        .pay(
            &id,
            "click-plain",
            json!({"source": "manual", "amount": "10.00"}),
        )
        .await;
    assert_eq!(status, 200);
    let key_id = firmspace::orgs::key_id(&crm.key);
    let mut actors: Vec<String> = crm
        .table_snapshot()
        .await
        .iter()
        .filter(|item| item.opt_str("kind") == Some("payment_event"))
        .map(|item| item.str_of("actor").unwrap().to_owned())
        .collect();
    actors.sort();
    assert_eq!(
        actors,
        [key_id.clone(), format!("{key_id}/admin")],
        "the key is the actor; the body only says for whom"
    );
    assert!(!key_id.contains(&crm.key), "no key in a record");
}

#[tokio::test]
async fn an_outbound_target_on_another_port_than_443_or_80_must_be_named() {
    let crm = Crm::new().await;
    for url in [
        "https://hooks.example.com:6379/x",
        "https://hooks.example.com:22/x",
    ] {
        let body = json!({"kind": "outbound", "url": url});
        let refused = crm
            .expect_error("POST", "/api/integrations", body, 400, "invalid_url")
            .await;
        assert!(
            refused["detail"].as_str().unwrap().contains("port"),
            "{refused}"
        );
    }
    let named =
        json!({"kind": "outbound", "url": "https://hooks.example.com:8443/x", "port": 8443});
    crm.expect_status("POST", "/api/integrations", named, 201)
        .await;
    assert_eq!(
        crm.count("integration").await,
        1,
        "only the named port's target"
    );
}
