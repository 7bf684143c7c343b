//! The operator's page in a real browser (Debian's headless Chromium through chromedriver),
//! against the stack deployed in ministack: sign in, see the API's numbers, resolve a review
//! item, redrive a dead letter, and keep a screenshot.

use super::stack;
use crate::support::webdriver::Driver;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// Polls `GET path` with `token` until `done` holds (at most `patience`).
async fn wait_for(
    stack: &super::Stack,
    path: &str,
    token: &str,
    patience: Duration,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let started = Instant::now();
    loop {
        let (_, body) = stack
            .api(reqwest::Method::GET, path, token, Value::Null)
            .await;
        if done(&body) || started.elapsed() > patience {
            return body;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[tokio::test]
async fn in_a_real_browser_the_page_shows_the_apis_numbers_resolves_and_redrives() {
    let stack = stack();
    let admin = stack.admin_token.clone();
    let (key, url, secret) = stack.org_with_integration().await;
    let org = key
        .split('_')
        .nth(1)
        .expect("fsk_{org}_{secret}")
        .to_owned();
    let post = reqwest::Method::POST;
    // A review item: a payment naming an invoice that does not exist.
    let unknown = json!({"type": "payment.succeeded", "data": {"payment_id": "pay_ops_unknown",
        "invoice_id": "inv_0000000000000000", "amount": "5.00", "currency": "UAH"}});
    assert_eq!(
        stack
            .deliver(&url, &secret, "msg_ops_1", &unknown.to_string())
            .await
            .0,
        200
    );
    // A dead letter: an invoice.paid rule whose target is down, and a payment that closes one.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let target = json!({"kind": "outbound", "url": format!("http://127.0.0.1:{port}/hook")});
    let (_, outbound) = stack
        .api(post.clone(), "/api/integrations", &key, target)
        .await;
    let rule = json!({"trigger": "invoice.paid", "action": {"type": "send_message",
        "integration_id": outbound["integration_id"], "text": "Thank you"}});
    assert_eq!(
        stack.api(post.clone(), "/api/rules", &key, rule).await.0,
        201
    );
    let (_, invoice) = stack
        .api(
            post.clone(),
            "/api/invoices",
            &key,
            json!({"currency": "UAH", "gross": "10.00"}),
        )
        .await;
    let paying = json!({"type": "payment.succeeded", "data": {"payment_id": "pay_ops_1",
        "invoice_id": invoice["id"], "amount": "10.00", "currency": "UAH"}});
    for _ in 0..2 {
        assert_eq!(
            stack
                .deliver(&url, &secret, "msg_ops_2", &paying.to_string())
                .await
                .0,
            200
        );
    }
    // Two receives 30 s apart fail, then SQS moves the trigger to the DLQ.
    let mine = |m: &Value| m["body"]["org"] == org.as_str();
    let dead = wait_for(
        &stack,
        "/ops/dlq/automation?limit=200",
        &admin,
        Duration::from_secs(150),
        |d| {
            d["items"]
                .as_array()
                .is_some_and(|items| items.iter().any(mine))
        },
    )
    .await;
    let letter = dead["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| mine(m))
        .expect("a dead letter")
        .clone();
    let review = wait_for(
        &stack,
        &format!("/ops/review?state=open&org={org}"),
        &admin,
        Duration::from_secs(10),
        |r| {
            r["items"]
                .as_array()
                .is_some_and(|i| i.iter().any(|r| r["reason"] == "unknown_invoice"))
        },
    )
    .await;
    let item = review["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["reason"] == "unknown_invoice")
        .unwrap()
        .clone();
    let item_id = item["id"].as_str().unwrap();

    let driver = Driver::start().await;
    let page = driver.session().await;
    page.open(&format!("{}/ops/", stack.api_url)).await;
    let key_field = page.find("#key").await;
    page.type_into(&key_field, &admin).await;
    page.click(&page.find("#login-button").await).await;
    page.click(&page.find(&format!("#org option[value='{org}']")).await)
        .await;
    page.until(&format!(
        "return !!document.querySelector(\"#review tr[data-id='{item_id}']\")"
    ))
    .await;
    page.until(&format!(
        "return document.getElementById('main').dataset.org === '{org}'"
    ))
    .await;

    // The numbers on the page are the API's.
    let (_, summary) = stack
        .api(
            reqwest::Method::GET,
            &format!("/ops/summary?org={org}"),
            &admin,
            Value::Null,
        )
        .await;
    let cells = page
        .run("return Array.from(document.querySelectorAll('#events-summary tr[data-kind=payment] td')).map(td => td.textContent)")
        .await;
    let payment = &summary["events"]["payment"];
    assert_eq!(
        cells,
        json!([
            "payment",
            payment["today"].to_string(),
            payment["week"].to_string(),
            payment["waiting"].to_string()
        ]),
        "{summary}"
    );
    assert_eq!(
        page.text(&page.find("#review-open").await).await,
        summary["review"]["open"].to_string()
    );
    assert!(payment["today"].as_u64().unwrap() >= 1);

    // Resolve the review item.
    let note = page
        .find(&format!("#review tr[data-id='{item_id}'] input.note"))
        .await;
    page.type_into(&note, "checked in the browser").await;
    page.click(
        &page
            .find(&format!("#review tr[data-id='{item_id}'] button.resolve"))
            .await,
    )
    .await;
    page.until(&format!(
        "return !document.querySelector(\"#review tr[data-id='{item_id}']\")"
    ))
    .await;
    let resolved = wait_for(
        &stack,
        &format!("/ops/review?state=resolved&org={org}"),
        &admin,
        Duration::from_secs(10),
        |r| {
            r["items"]
                .as_array()
                .is_some_and(|i| i.iter().any(|r| r["id"] == item_id))
        },
    )
    .await;
    let done = resolved["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == item_id)
        .unwrap()
        .clone();
    assert_eq!(
        (done["resolved_by"].as_str(), done["note"].as_str()),
        (Some("admin"), Some("checked in the browser"))
    );

    // Redrive the dead letters of the automation queue.
    page.click(&page.find("#dlq-queue option[value='automation']").await)
        .await;
    let letter_id = letter["id"].as_str().unwrap();
    page.until(&format!(
        "return !!document.querySelector(\"#dlq tr[data-id='{letter_id}']\")"
    ))
    .await;
    let shot = page.screenshot().await;
    page.click(&page.find("#redrive").await).await;
    page.until("return document.getElementById('last-action').textContent.includes('moved')")
        .await;
    let status = page.text(&page.find("#last-action").await).await;
    assert!(status.contains("\"moved\":"), "{status}");
    let after = wait_for(
        &stack,
        "/ops/dlq/automation?limit=200",
        &admin,
        Duration::from_secs(10),
        |d| {
            d["items"]
                .as_array()
                .is_some_and(|items| !items.iter().any(|m| m["id"] == letter_id))
        },
    )
    .await;
    assert!(
        !after["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["id"] == letter_id),
        "{after}"
    );
    page.close().await;

    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/ops-page.png");
    std::fs::write(&path, &shot).expect("the screenshot is written");
    let written = std::fs::read(&path).unwrap();
    assert!(
        written.starts_with(b"\x89PNG\r\n\x1a\n") && written.len() > 20_000,
        "{} bytes",
        written.len()
    );
}
