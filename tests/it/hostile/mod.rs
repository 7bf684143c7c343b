//! A hostile sender against every endpoint, in-process against ministack: malformed and mistyped
//! JSON, oversize and out-of-charset fields, absurd amounts, unknown currencies, weak secrets, bad
//! timestamps and signatures, unknown routes and methods, and a burst of all of them. Each gets a
//! 4xx `{"error", "detail"}` of ours (no Rust type in it, nothing echoed at length), and the table
//! is left exactly as it was: no item added, changed or removed, every balance the same.

mod daily_cases;
mod setup_cases;
mod webhooks;

use crate::support::app::Crm;
use crate::support::{json_of, request};
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

fn raw(method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Request {
    request(method, path, headers, body.to_vec())
}

async fn answer(app: &::api::App, req: Request) -> (u16, Value) {
    let res = app.handle(req).await.unwrap();
    (res.status().as_u16(), json_of(&res))
}

#[tokio::test]
async fn hostile_api_requests_get_a_4xx_of_ours_and_write_nothing() {
    let crm = Crm::new().await;
    let hundred = json!({"currency": "UAH", "gross": "100.00"});
    let invoice = crm.invoice(hundred).await;
    let yen = crm
        .invoice(json!({"currency": "JPY", "gross": "1000"}))
        .await;
    let (invoice, yen) = (invoice["id"].as_str().unwrap(), yen["id"].as_str().unwrap());
    let before = crm.table_snapshot().await;
    let cases = api_cases(&crm.key, invoice, yen);
    assert!(cases.len() > 100, "{} cases", cases.len());
    for (case, req) in cases {
        let (status, body) = answer(&crm.api, req).await;
        assert_refused(&case, status, &body);
    }
    // A burst: every case again, all at once.
    let burst = api_cases(&crm.key, invoice, yen);
    let answers = futures::future::join_all(burst.into_iter().map(|(case, req)| {
        let app = &crm.api;
        async move { (case, answer(app, req).await) }
    }))
    .await;
    for (case, (status, body)) in answers {
        assert_refused(&format!("burst: {case}"), status, &body);
    }
    assert!(
        crm.table_snapshot().await == before,
        "a refused request wrote to the table"
    );
    let (_, after) = crm
        .call("GET", &format!("/api/invoices/{invoice}"), Value::Null)
        .await;
    assert_eq!(
        (after["paid"].as_str(), after["status"].as_str()),
        (Some("0.00"), Some("open"))
    );
}
