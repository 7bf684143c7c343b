//! A hostile sender against every endpoint, in-process against ministack: malformed and mistyped
//! JSON, oversize and out-of-charset fields, absurd amounts, unknown currencies, weak secrets, bad
//! timestamps and signatures, unknown routes and methods, and a burst of all of them. Each gets a
//! 4xx `{"error", "detail"}` of ours (no Rust type in it, nothing echoed at length), and the table
//! is left exactly as it was: no item added, changed or removed, every balance the same.

mod daily_cases;
mod setup_cases;
mod webhooks;

use crate::support::api;
use crate::support::{json_of, request, TestEnv};
use firmspace::store::Item;
use lambda_http::Request;
use serde_json::{json, Value};
use setup_cases::api_cases;

/// A refusal of ours: 4xx, JSON with `error` and `detail`, in the caller's terms.
pub(crate) fn assert_refused(case: &str, status: u16, body: &Value) {
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
pub(crate) async fn snapshot(env: &TestEnv) -> Vec<Item> {
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
