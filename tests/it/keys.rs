//! API keys with scopes: `POST/GET/DELETE /api/keys`, and a key refused what its scopes do not
//! cover, on the api and on the operator's view.

use crate::ops::Ops;
use crate::support::api as api_support;
use crate::support::app::Crm;
use serde_json::{json, Value};

/// A new key of `crm`'s organisation with these scopes: its id and the key.
async fn key_with(crm: &Crm, scopes: &[&str]) -> (String, String) {
    let made = crm
        .expect_status(
            "POST",
            "/api/keys",
            json!({"name": "integration tests", "scopes": scopes}),
            201,
        )
        .await;
    assert_eq!(made["scopes"], json!(scopes), "{made}");
    let id = made["key_id"].as_str().unwrap().to_owned();
    assert_eq!(
        id,
        firmspace::orgs::key_id(made["api_key"].as_str().unwrap())
    );
    (id, made["api_key"].as_str().unwrap().to_owned())
}

#[tokio::test]
async fn a_read_key_reads_and_is_refused_every_write() {
    let crm = Crm::new().await;
    let (_, read) = key_with(&crm, &["read"]).await;
    let (status, _) = crm
        .call_as(&read, "GET", "/api/invoices", Value::Null)
        .await;
    assert_eq!(status, 200);
    let invoice = json!({"gross": "10.00", "currency": "EUR"});
    for (method, path, body) in [
        ("POST", "/api/invoices", invoice),
        (
            "POST",
            "/api/keys",
            json!({"name": "x", "scopes": ["read"]}),
        ),
        ("GET", "/api/keys", Value::Null),
    ] {
        let (status, answer) = crm.call_as(&read, method, path, body).await;
        assert_eq!(
            (status, &answer["error"]),
            (403, &json!("forbidden")),
            "{path}"
        );
    }
    assert_eq!(
        crm.count("invoice").await,
        0,
        "a refused write writes nothing"
    );
}

#[tokio::test]
async fn a_key_grants_no_scope_it_lacks_and_the_list_shows_no_secret() {
    let crm = Crm::new().await;
    let (_, ops) = key_with(&crm, &["read", "ops"]).await;
    let wider = json!({"name": "wider", "scopes": ["write"]});
    let (status, answer) = crm.call_as(&ops, "POST", "/api/keys", wider).await;
    assert_eq!((status, answer["error"].as_str()), (403, Some("forbidden")));
    let narrow = json!({"name": "narrow", "scopes": ["read"]});
    let (status, _) = crm.call_as(&ops, "POST", "/api/keys", narrow).await;
    assert_eq!(status, 201);
    for bad in [json!([]), json!(["admin"]), json!("read")] {
        let body = json!({"name": "x", "scopes": bad});
        let answer = crm.expect_status("POST", "/api/keys", body, 400).await;
        assert!(["invalid_scopes", "malformed"].contains(&answer["error"].as_str().unwrap()));
    }
    let listed = crm.get("/api/keys").await;
    let items = listed["items"].as_array().unwrap();
    let scopes: Vec<&Value> = items.iter().map(|k| &k["scopes"]).collect();
    assert_eq!(
        scopes,
        [
            &json!(["read", "write", "ops"]),
            &json!(["read", "ops"]),
            &json!(["read"])
        ],
        "the organisation's first key, then the two made, oldest first"
    );
    let text = listed.to_string();
    assert!(!text.contains(&ops) && !text.contains(&crm.key) && !text.contains("api_key"));
}

#[tokio::test]
async fn a_revoked_key_authenticates_nothing_and_revoking_again_answers_the_same() {
    let crm = Crm::new().await;
    let (id, key) = key_with(&crm, &["read", "write"]).await;
    let path = format!("/api/keys/{id}");
    let revoked = crm.expect_status("DELETE", &path, Value::Null, 200).await;
    assert_eq!(
        revoked["revoked_by"],
        firmspace::orgs::key_id(&crm.key).as_str()
    );
    assert!(revoked["revoked_at"].is_string(), "{revoked}");
    let (status, _) = crm.call_as(&key, "GET", "/api/invoices", Value::Null).await;
    assert_eq!(status, 401);
    let again = crm.expect_status("DELETE", &path, Value::Null, 200).await;
    assert_eq!(again, revoked);
    crm.expect_error(
        "DELETE",
        "/api/keys/key_0000000000000000",
        Value::Null,
        404,
        "not_found",
    )
    .await;
    let other = crm.another_org().await;
    let (status, _) = crm.call_as(&other, "DELETE", &path, Value::Null).await;
    assert_eq!(status, 404, "another organisation's key is not found");
}

#[tokio::test]
async fn the_operator_view_needs_read_to_look_and_ops_to_act() {
    let o = Ops::new().await;
    let (key, _) = crate::ops::org_by_key(&o).await;
    let made = |scopes: Value| {
        let body = json!({"name": "ops test", "scopes": scopes});
        api_support::call(&o.api, "POST", "/api/keys", &key, body)
    };
    let (_, read) = made(json!(["read"])).await;
    let (_, write) = made(json!(["write"])).await;
    let (read, write) = (
        read["api_key"].as_str().unwrap(),
        write["api_key"].as_str().unwrap(),
    );
    assert_eq!(o.get("/ops/summary", read).await.0, 200);
    assert_eq!(o.get("/ops/summary", write).await.0, 403);
    let path = "/ops/review/rev_0000/resolve";
    let (status, answer) = o.post(path, read, "k-1", &json!({"note": "n"})).await;
    assert_eq!((status, answer["error"].as_str()), (403, Some("forbidden")));
    let (status, _) = o.post(path, &key, "k-2", &json!({"note": "n"})).await;
    assert_eq!(status, 404, "a full key gets as far as the item");
}

/// `method path` as `token`, with `body` as JSON, answered at `now`: one fixed minute of the
/// limits, whatever the clock does between calls.
async fn answered_at(
    app: &::api::App,
    (method, path, token): (&str, &str, &str),
    body: Option<Value>,
    now: chrono::DateTime<chrono::Utc>,
) -> lambda_http::Response<lambda_http::Body> {
    let auth = format!("Bearer {token}");
    let mut headers = vec![("authorization", auth.as_str())];
    if body.is_some() {
        headers.push(("content-type", "application/json"));
    }
    let body = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
    let req = crate::support::request(method, path, &headers, body);
    app.respond(&req, now)
        .await
        .unwrap_or_else(|e| e.into_response())
}

/// `GET /api/invoices` as `key` at `now`: the status, the answer and its `Retry-After`.
async fn list_invoices(
    app: &::api::App,
    key: String,
    now: chrono::DateTime<chrono::Utc>,
) -> (u16, Value, Option<String>) {
    let res = answered_at(app, ("GET", "/api/invoices", &key), None, now).await;
    let retry = res
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    (res.status().as_u16(), crate::support::json_of(&res), retry)
}

#[tokio::test]
async fn a_key_over_its_reads_a_minute_gets_429_and_another_key_reads_on() {
    let env = crate::support::TestEnv::new().await;
    let mut settings = api_support::settings();
    settings.limits.reads = 3;
    let app = ::api::App::new(env.store.clone(), settings);
    let (first, second) = (
        api_support::new_org(&app).await,
        api_support::new_org(&app).await,
    );
    // One fixed minute, so the window cannot turn over between the calls.
    let now = chrono::Utc::now();
    let read = |key: &str| list_invoices(&app, key.to_owned(), now);
    for _ in 0..3 {
        assert_eq!(read(&first).await.0, 200);
    }
    let (status, refused, retry) = read(&first).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (429, Some("rate_limited")),
        "{refused}"
    );
    let seconds = refused["retry_after"].as_u64().unwrap();
    assert!((1..=60).contains(&seconds));
    assert_eq!(retry, Some(seconds.to_string()));
    assert_eq!(read(&second).await.0, 200, "the limit is each key's own");
    let body = json!({"gross": "10.00", "currency": "EUR"});
    let (status, _) = api_support::call(&app, "POST", "/api/invoices", &first, body).await;
    assert_eq!(status, 201, "writes are not read-limited");
}

#[tokio::test]
async fn an_organisations_keys_together_meet_its_own_limit() {
    let mut settings = api_support::settings();
    settings.limits.reads = 3;
    settings.limits.org_reads = 4;
    let crm = Crm::new().await;
    let app = ::api::App::new(crm.env.store.clone(), settings);
    let (_, second) = key_with(&crm, &["read"]).await;
    let now = chrono::Utc::now();
    let read = |key: String| async {
        let (status, answer, _) = list_invoices(&app, key, now).await;
        (status, answer)
    };
    // Three with the first key (its own limit), one with the second: the organisation's four.
    for _ in 0..3 {
        assert_eq!(read(crm.key.clone()).await.0, 200);
    }
    assert_eq!(read(second.clone()).await.0, 200);
    // The second key is far under its own limit, but the organisation's is spent.
    let (status, refused) = read(second).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (429, Some("rate_limited")),
        "{refused}"
    );
    // A key of another organisation reads on.
    let other = api_support::new_org(&app).await;
    assert_eq!(read(other).await.0, 200);
}

#[tokio::test]
async fn a_key_over_its_writes_a_minute_gets_429_before_the_write_and_reads_on() {
    let env = crate::support::TestEnv::new().await;
    let mut settings = api_support::settings();
    settings.limits.writes = 2;
    let app = ::api::App::new(env.store.clone(), settings);
    let key = api_support::new_org(&app).await;
    let now = chrono::Utc::now();
    let contact = |n: usize| {
        let body = json!({"name": format!("Contact {n}")});
        let (app, key) = (&app, &key);
        async move {
            let res = answered_at(app, ("POST", "/api/contacts", key), Some(body), now).await;
            (
                res.status().as_u16(),
                res.headers().contains_key("retry-after"),
            )
        }
    };
    assert_eq!(contact(1).await.0, 201);
    assert_eq!(contact(2).await.0, 201);
    assert_eq!(contact(3).await, (429, true), "refused before the write");
    assert_eq!(env.count("contact").await, 2, "the third was never written");
    let res = answered_at(&app, ("GET", "/api/contacts", &key), None, now).await;
    assert_eq!(res.status(), 200, "reads have their own budget");
}

#[tokio::test]
async fn the_admins_new_organisations_count_against_its_writes() {
    let env = crate::support::TestEnv::new().await;
    let mut settings = api_support::settings();
    settings.limits.writes = 2;
    let app = ::api::App::new(env.store.clone(), settings);
    // One minute for all three.
    let now = chrono::Utc::now();
    let org = || async {
        let admin = ("POST", "/api/orgs", api_support::ADMIN);
        let body = Some(json!({"name": "Acme"}));
        answered_at(&app, admin, body, now).await.status().as_u16()
    };
    assert_eq!([org().await, org().await, org().await], [201, 201, 429]);
    assert_eq!(env.count("org").await, 2, "the third was never written");
}

#[tokio::test]
async fn junk_at_one_integration_spends_its_budget_only() {
    use crate::support::fixtures;
    use firmspace::payments::providers::Provider;
    let env = crate::support::TestEnv::new().await;
    let org = fixtures::org(&env).await.id;
    let (a, b) = (
        fixtures::integration(&env, &org, Provider::Standard).await,
        fixtures::integration(&env, &org, Provider::Standard).await,
    );
    let inv = fixtures::invoice(&env, &org, rust_decimal_macros::dec!(100), "UAH").await;
    let app = payment_webhook::app(env.store.clone()).with_deliveries_per_minute(3);
    let junk = |hook: &firmspace::ids::IntegrationId| {
        crate::support::request(
            "POST",
            &format!("/hooks/{hook}/payments"),
            &[("content-type", "application/json")],
            b"{}".to_vec(),
        )
    };
    let now = chrono::Utc::now();
    // Junk spends a budget apart, a tenth of the provider's (one a minute at this limit, and
    // the one share more a budget may go past it).
    let mut refused = 0;
    let over = loop {
        let res = app.respond(&junk(&a), now).await.unwrap_err();
        match res.status {
            401 => refused += 1,
            _ => break res,
        }
        assert!(refused <= 2, "unsigned: refused and counted, at most twice");
    };
    assert_eq!((over.status, over.retry_after.is_some()), (429, true));
    // The budget is the deployment's: another warm instance spends its free share (one
    // delivery at this limit), then meets the budget the first one spent.
    let other = payment_webhook::app(env.store.clone()).with_deliveries_per_minute(3);
    assert_eq!(other.respond(&junk(&a), now).await.unwrap_err().status, 401);
    let over = other.respond(&junk(&a), now).await.unwrap_err();
    assert_eq!(over.status, 429, "spent by the first instance");
    // The genuine provider at A goes on: the junk did not spend its budget.
    for i in 0..3 {
        let body = fixtures::standard_body(&format!("pay_a{i}"), inv.id.as_str(), Some("1.00"));
        let id = format!("msg_a{i}");
        let signed = fixtures::standard_request_with_id(&a, &body, now.timestamp(), &id);
        assert_eq!(app.respond(&signed, now).await.unwrap().status(), 200);
    }
    // B's deliveries go on: A's junk spent A's budget only.
    let body = fixtures::standard_body("pay_b", inv.id.as_str(), Some("1.00"));
    let signed = fixtures::standard_request_with_id(&b, &body, now.timestamp(), "msg_b");
    assert_eq!(other.respond(&signed, now).await.unwrap().status(), 200);
    assert_eq!(env.count("payment_event").await, 4);
}

/// Keys made at once stop at the cap, however many ask together: each is counted in its own
/// transaction. Every key made is listed and can be revoked. An organisation made before keys
/// were counted begins its count at the keys it lists.
#[tokio::test]
async fn keys_made_at_once_stop_at_the_cap_and_every_one_is_listed_and_revocable() {
    use firmspace::orgs::keys::{self, Scopes, KEYS_MAX};
    use firmspace::store::CapError;
    use futures::StreamExt;
    let crm = Crm::new().await;
    let store = &crm.env.store;
    let (_, _) = key_with(&crm, &["read"]).await;
    // As if made before keys were counted: two keys listed, no count.
    store.delete(&keys::count_pk(&crm.org)).await.unwrap();
    let made: Vec<Result<(), CapError>> = futures::stream::iter(0..KEYS_MAX + 10)
        .map(|i| {
            let (store, org) = (store.clone(), crm.org.clone());
            async move {
                let name = format!("k{i}");
                let now = chrono::Utc::now();
                let (_, _, mut put) = keys::another(&store, &org, (&name, Scopes::FULL), "t", now)
                    .await
                    .unwrap();
                store.write(&mut put, now).await.map(drop)
            }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    let ok = made.iter().filter(|m| m.is_ok()).count();
    let full = made
        .iter()
        .filter(|m| matches!(m, Err(CapError::Full)))
        .count();
    assert_eq!((ok, full), (KEYS_MAX - 2, 12), "the cap holds two at once");
    let listed = crm.get("/api/keys").await;
    let items = listed["items"].as_array().unwrap();
    assert_eq!(items.len(), KEYS_MAX, "every key is listed");
    let newest = items.last().unwrap()["key_id"].as_str().unwrap();
    let path = format!("/api/keys/{newest}");
    crm.expect_status("DELETE", &path, Value::Null, 200).await;
    crm.expect_error(
        "POST",
        "/api/keys",
        json!({"name": "one more", "scopes": ["read"]}),
        409,
        "too_many_keys",
    )
    .await;
}
