//! A hostile sender against every endpoint, in-process against ministack: malformed and mistyped
//! JSON, oversize and out-of-charset fields, absurd amounts, unknown currencies, weak secrets, bad
//! timestamps and signatures, unknown routes and methods, and a burst of all of them. Each gets a
//! 4xx `{"error", "detail"}` of ours (no Rust type in it, nothing echoed at length), and the table
//! is left exactly as it was: no item added, changed or removed, every balance the same.

use crate::support::api::{self, ADMIN};
use crate::support::fixtures::{self, now, NOW};
use crate::support::{json_of, request, TestEnv};
use firmspace::http::ApiError;
use firmspace::payments::providers::Provider;
use firmspace::store::Item;
use lambda_http::{Body, Request};
use rust_decimal_macros::dec;
use serde_json::{json, Value};

/// A refusal of ours: 4xx, JSON with `error` and `detail`, in the caller's terms.
fn assert_refused(case: &str, status: u16, body: &Value) {
    assert!((400..500).contains(&status), "{case}: {status} {body}");
    let (Some(_), Some(detail)) = (body["error"].as_str(), body["detail"].as_str()) else {
        panic!("{case}: not our error JSON: {body}");
    };
    for rust in ["::", "struct ", "enum ", "Error {", "panicked"] {
        assert!(
            !detail.contains(rust),
            "{case}: names Rust ({rust}): {detail}"
        );
    }
    assert!(
        detail.len() <= 400,
        "{case}: detail of {} bytes",
        detail.len()
    );
}

/// The whole table, in a stable order: what "nothing written" is compared by.
async fn snapshot(env: &TestEnv) -> Vec<Item> {
    let mut items = env.items().await;
    let key = |i: &Item| format!("{:?}{:?}", i.get("pk"), i.get("sk"));
    items.sort_by_key(key);
    items
}

fn raw(method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Request {
    request(method, path, headers, body.to_vec())
}

async fn answer(app: &::api::App, req: Request) -> (u16, Value) {
    let res = app.handle(req).await.unwrap();
    (res.status().as_u16(), json_of(&res))
}

/// Every bad request the API is sent, as (case, request).
fn api_cases(key: &str, invoice: &str, jpy_invoice: &str) -> Vec<(String, Request)> {
    let org = format!("Bearer {key}");
    let admin = format!("Bearer {ADMIN}");
    let auth = |token: &str| vec![("authorization", token.to_owned())];
    let huge = "x".repeat(1 << 20);
    let mut cases: Vec<(String, Request)> = Vec::new();
    let json_case = |cases: &mut Vec<(String, Request)>,
                     name: &str,
                     method: &str,
                     path: &str,
                     token: &str,
                     body: Value| {
        let headers = auth(token);
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        cases.push((
            format!("{method} {path} {name}"),
            raw(method, path, &headers, body.to_string().as_bytes()),
        ));
    };

    // Organisations and members.
    for (name, body) in [
        ("array", json!([])),
        ("number", json!(5)),
        ("mistyped name", json!({"name": 5})),
        ("empty name", json!({"name": "  "})),
        ("1 MiB name", json!({"name": huge})),
        ("NUL in name", json!({"name": "Acme\u{0}"})),
    ] {
        json_case(&mut cases, name, "POST", "/api/orgs", &admin, body);
    }
    for (name, body) in [
        ("user_id with #", json!({"user_id": "u#1", "name": "Ann"})),
        ("1 MiB user_id", json!({"user_id": huge, "name": "Ann"})),
        ("1 MiB name", json!({"user_id": "u1", "name": huge})),
        (
            "control in name",
            json!({"user_id": "u1", "name": "A\u{7}nn"}),
        ),
        ("missing name", json!({"user_id": "u1"})),
    ] {
        json_case(&mut cases, name, "POST", "/api/members", &org, body);
    }

    // Integrations: weak secrets, bad keys, oversize fields, inward URLs.
    let payments = |extra: Value| {
        let mut body = json!({"kind": "payments"});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body
    };
    for (name, body) in [
        ("unknown kind", json!({"kind": "bank"})),
        ("calls without provider", json!({"kind": "calls"})),
        (
            "twilio without auth_token",
            json!({"kind": "calls", "provider": "twilio"}),
        ),
        (
            "1 MiB twilio auth_token",
            json!({"kind": "calls", "provider": "twilio", "auth_token": huge}),
        ),
        (
            "calls with a weak secret",
            json!({"kind": "calls", "provider": "standard", "secret": "whsec_AAAA"}),
        ),
        ("unknown provider", payments(json!({"provider": "paypal"}))),
        (
            "empty whsec",
            payments(json!({"provider": "standard", "secret": "whsec_"})),
        ),
        (
            "3-byte whsec",
            payments(json!({"provider": "standard", "secret": "whsec_AAAA"})),
        ),
        (
            "23-byte whsec",
            payments(
                json!({"provider": "standard", "secret": "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}),
            ),
        ),
        (
            "1 MiB secret",
            payments(json!({"provider": "standard", "secret": huge})),
        ),
        (
            "empty stripe secret",
            payments(json!({"provider": "stripe", "secret": ""})),
        ),
        (
            "garbage monobank key",
            payments(json!({"provider": "monobank", "public_key": "bm90IGEga2V5"})),
        ),
        (
            "1 MiB monobank key",
            payments(json!({"provider": "monobank", "public_key": huge})),
        ),
        (
            "1 MiB monobank token",
            payments(
                json!({"provider": "monobank", "public_key": fixtures::monobank_public_key_b64(), "token": huge}),
            ),
        ),
        (
            "1 MiB url",
            json!({"kind": "outbound", "url": format!("https://example.com/{huge}")}),
        ),
        (
            "private url",
            json!({"kind": "outbound", "url": "https://10.0.0.1/x"}),
        ),
        (
            "IPv4-compatible url",
            json!({"kind": "outbound", "url": "https://[::10.0.0.1]/x"}),
        ),
        (
            "NAT64 url",
            json!({"kind": "outbound", "url": "https://[64:ff9b::a9fe:a9fe]/x"}),
        ),
        (
            "reserved status_url",
            json!({"kind": "outbound", "url": "https://example.com/x", "status_url": "https://240.0.0.1/{key}"}),
        ),
        (
            "NUL in url",
            json!({"kind": "outbound", "url": "https://example.com/\u{0}"}),
        ),
    ] {
        json_case(&mut cases, name, "POST", "/api/integrations", &org, body);
    }

    // Invoices: currencies and amounts, links.
    for (name, body) in [
        (
            "unknown currency",
            json!({"currency": "XXY", "gross": "10.00"}),
        ),
        (
            "no minor units",
            json!({"currency": "XAU", "gross": "10.00"}),
        ),
        (
            "four letters",
            json!({"currency": "UAHH", "gross": "10.00"}),
        ),
        (
            "currency as number",
            json!({"currency": 980, "gross": "10.00"}),
        ),
        ("exponent", json!({"currency": "UAH", "gross": "1e3"})),
        ("negative", json!({"currency": "UAH", "gross": "-1"})),
        ("zero", json!({"currency": "UAH", "gross": "0.00"})),
        (
            "ten billion",
            json!({"currency": "UAH", "gross": "10000000000"}),
        ),
        (
            "40 digits",
            json!({"currency": "UAH", "gross": "1234567890123456789012345678901234567890"}),
        ),
        (
            "29 significant digits",
            json!({"currency": "UAH", "gross": "1.0000000000000000000000000001"}),
        ),
        (
            "kopiyka fractions",
            json!({"currency": "UAH", "gross": "10.005"}),
        ),
        ("yen fractions", json!({"currency": "JPY", "gross": "10.5"})),
        ("won fractions", json!({"currency": "KRW", "gross": "10.5"})),
        (
            "fils beyond 3",
            json!({"currency": "BHD", "gross": "1.0005"}),
        ),
        ("gross as number", json!({"currency": "UAH", "gross": 10})),
        (
            "owner with #",
            json!({"currency": "UAH", "gross": "10.00", "owner": "k1#u1"}),
        ),
        (
            "1 MiB contact_id",
            json!({"currency": "UAH", "gross": "10.00", "contact_id": huge}),
        ),
        (
            "control in deal_id",
            json!({"currency": "UAH", "gross": "10.00", "deal_id": "d\u{1b}1"}),
        ),
        (
            "empty company_id",
            json!({"currency": "UAH", "gross": "10.00", "company_id": ""}),
        ),
    ] {
        json_case(&mut cases, name, "POST", "/api/invoices", &org, body);
    }

    // Paying an invoice: keys, sources, amounts.
    let pay = format!("/api/invoices/{invoice}/payments");
    let pay_jpy = format!("/api/invoices/{jpy_invoice}/payments");
    let long_key = "k".repeat(256);
    for (name, path, idem, body) in [
        ("no key", &pay, None, json!({"source": "manual"})),
        (
            "key with #",
            &pay,
            Some("k1#u1"),
            json!({"source": "manual"}),
        ),
        (
            "256-char key",
            &pay,
            Some(long_key.as_str()),
            json!({"source": "manual"}),
        ),
        (
            "unknown source",
            &pay,
            Some("k1"),
            json!({"source": "cash"}),
        ),
        (
            "kopiyka fractions",
            &pay,
            Some("k2"),
            json!({"source": "manual", "amount": "1.001"}),
        ),
        (
            "yen fractions",
            &pay_jpy,
            Some("k3"),
            json!({"source": "manual", "amount": "1.5"}),
        ),
        (
            "ten billion",
            &pay,
            Some("k4"),
            json!({"source": "manual", "amount": "99999999999"}),
        ),
        (
            "amount as number",
            &pay,
            Some("k5"),
            json!({"source": "manual", "amount": 5}),
        ),
        (
            "1 MiB actor",
            &pay,
            Some("k6"),
            json!({"source": "manual", "actor": huge}),
        ),
        (
            "unknown invoice",
            &"/api/invoices/inv_0000000000000000/payments".to_owned(),
            Some("k7"),
            json!({"source": "manual"}),
        ),
    ] {
        let mut headers = vec![("authorization", org.as_str())];
        headers.extend(idem.map(|k| ("idempotency-key", k)));
        cases.push((
            format!("POST {path} {name}"),
            raw("POST", path, &headers, body.to_string().as_bytes()),
        ));
    }
    let mut non_ascii = raw(
        "POST",
        &pay,
        &[("authorization", &org)],
        br#"{"source":"manual"}"#,
    );
    non_ascii.headers_mut().insert(
        "idempotency-key",
        http::HeaderValue::from_bytes("ключ".as_bytes()).unwrap(),
    );
    cases.push(("non-ASCII Idempotency-Key".into(), non_ascii));

    // Consequences: reads and settings.
    for (name, body) in [
        ("1 MiB key", json!({"key": huge})),
        ("NUL in key", json!({"key": "a\u{0}"})),
    ] {
        json_case(
            &mut cases,
            name,
            "POST",
            "/api/notifications/read",
            &org,
            body,
        );
    }
    for (name, body) in [
        (
            "unknown trigger",
            json!({"trigger": "invoice.eaten", "action": {"type": "create_task", "title": "x"}}),
        ),
        (
            "unknown action",
            json!({"trigger": "invoice.paid", "action": {"type": "launch"}}),
        ),
        (
            "action as array",
            json!({"trigger": "invoice.paid", "action": []}),
        ),
        (
            "1 MiB title",
            json!({"trigger": "invoice.paid", "action": {"type": "create_task", "title": huge}}),
        ),
        (
            "NUL in text",
            json!({"trigger": "invoice.paid", "action": {"type": "send_message", "integration_id": "o0123456789ab_0123456789abcdef", "text": "a\u{0}"}}),
        ),
        (
            "foreign integration",
            json!({"trigger": "invoice.paid", "action": {"type": "send_message", "integration_id": "o0123456789ab_0123456789abcdef", "text": "hi"}}),
        ),
    ] {
        json_case(&mut cases, name, "POST", "/api/rules", &org, body);
    }
    // Calls and contacts.
    for (name, body) in [
        (
            "no call_id",
            json!({"direction": "inbound", "peer": "+380441234567", "status": "completed"}),
        ),
        (
            "call_id with #",
            json!({"call_id": "a#b", "direction": "inbound", "peer": "+380441234567", "status": "completed"}),
        ),
        (
            "1 MiB call_id",
            json!({"call_id": huge, "direction": "inbound", "peer": "+380441234567", "status": "completed"}),
        ),
        (
            "unknown direction",
            json!({"call_id": "c1", "direction": "up", "peer": "+380441234567", "status": "completed"}),
        ),
        (
            "peer not E.164",
            json!({"call_id": "c1", "direction": "inbound", "peer": "0441234567", "status": "completed"}),
        ),
        (
            "1 MiB peer",
            json!({"call_id": "c1", "direction": "inbound", "peer": huge, "status": "completed"}),
        ),
        (
            "unknown status",
            json!({"call_id": "c1", "direction": "inbound", "peer": "+380441234567", "status": "answered"}),
        ),
        (
            "negative duration",
            json!({"call_id": "c1", "direction": "inbound", "peer": "+380441234567", "status": "completed", "duration": -1}),
        ),
        (
            "duration over a day",
            json!({"call_id": "c1", "direction": "inbound", "peer": "+380441234567", "status": "completed", "duration": 86401}),
        ),
    ] {
        json_case(&mut cases, name, "POST", "/api/calls", &org, body);
    }
    for (name, body) in [
        ("no name", json!({"phone": "+380441234567"})),
        ("1 MiB name", json!({"name": huge})),
        ("phone not E.164", json!({"name": "Ann", "phone": "12345"})),
        ("owner with #", json!({"name": "Ann", "owner": "u#1"})),
    ] {
        json_case(&mut cases, name, "POST", "/api/contacts", &org, body);
    }
    let reads = [
        format!("/api/notifications?recipient={}", "r".repeat(200)),
        "/api/notifications?recipient=a%23b".to_owned(),
        "/api/notifications".to_owned(),
        "/api/activity/planet/c1".to_owned(),
        format!("/api/activity/contact/{}", "c".repeat(200)),
    ];
    for path in reads {
        cases.push((
            format!("GET {path}"),
            raw("GET", &path, &[("authorization", &org)], b""),
        ));
    }

    // Malformed bodies on every POST route.
    for path in [
        "/api/orgs",
        "/api/integrations",
        "/api/members",
        "/api/invoices",
        "/api/notifications/read",
        "/api/rules",
        "/api/calls",
        "/api/contacts",
    ] {
        let token = if path == "/api/orgs" { &admin } else { &org };
        for (name, body) in [
            ("truncated JSON", &b"{\"name\":"[..]),
            ("not JSON", b"name=Acme"),
            ("invalid UTF-8", b"{\"name\":\"\xff\xfe\"}"),
            ("empty", b""),
        ] {
            cases.push((
                format!("POST {path} {name}"),
                raw("POST", path, &[("authorization", token)], body),
            ));
        }
    }

    // A body over 256 KiB on any route.
    let big = vec![b' '; 300 * 1024];
    cases.push((
        "POST /api/invoices 300 KiB".into(),
        raw("POST", "/api/invoices", &[("authorization", &org)], &big),
    ));

    // Unknown routes and methods, with and without a key.
    for (method, path) in [
        ("DELETE", "/api/invoices"),
        ("PUT", "/api/orgs"),
        ("GET", "/api/nothing"),
        ("POST", "/api/invoices/inv_1/refund"),
        ("GET", "/hooks/o0123456789ab_0123456789abcdef/payments"),
        ("GET", "/"),
        ("POST", "/wp-login.php"),
    ] {
        for token in [org.as_str(), "Bearer nobody"] {
            cases.push((
                format!("{method} {path} as {}", &token[..10]),
                raw(method, path, &[("authorization", token)], b"{}"),
            ));
        }
    }
    cases
}

#[tokio::test]
async fn hostile_api_requests_get_a_4xx_of_ours_and_write_nothing() {
    let env = TestEnv::new().await;
    let app = api::app(&env);
    let key = api::new_org(&app).await;
    let (status, invoice) = api::call(
        &app,
        "POST",
        "/api/invoices",
        &key,
        json!({"currency": "UAH", "gross": "100.00"}),
    )
    .await;
    assert_eq!(status, 201, "{invoice}");
    let (status, yen) = api::call(
        &app,
        "POST",
        "/api/invoices",
        &key,
        json!({"currency": "JPY", "gross": "1000"}),
    )
    .await;
    assert_eq!(status, 201, "{yen}");
    let before = snapshot(&env).await;

    let cases = api_cases(
        &key,
        invoice["id"].as_str().unwrap(),
        yen["id"].as_str().unwrap(),
    );
    assert!(cases.len() > 100, "{} cases", cases.len());
    for (case, req) in cases {
        let (status, body) = answer(&app, req).await;
        assert_refused(&case, status, &body);
    }
    // A burst: every case again, all at once.
    let burst = api_cases(
        &key,
        invoice["id"].as_str().unwrap(),
        yen["id"].as_str().unwrap(),
    );
    let answers = futures::future::join_all(burst.into_iter().map(|(case, req)| {
        let app = &app;
        async move { (case, answer(app, req).await) }
    }))
    .await;
    for (case, (status, body)) in answers {
        assert_refused(&format!("burst: {case}"), status, &body);
    }

    assert!(
        snapshot(&env).await == before,
        "a refused request wrote to the table"
    );
    let (_, after) = api::call(
        &app,
        "GET",
        &format!("/api/invoices/{}", invoice["id"].as_str().unwrap()),
        &key,
        Value::Null,
    )
    .await;
    assert_eq!(
        (after["paid"].as_str(), after["status"].as_str()),
        (Some("0.00"), Some("open"))
    );
}

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
