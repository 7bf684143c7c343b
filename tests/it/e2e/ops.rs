//! The operator's page in a real browser (Debian's headless Chromium through chromedriver),
//! against the stack deployed in ministack: sign in, see the API's numbers, resolve a review
//! item, redrive a dead letter, and keep a screenshot.

use super::stack;
use crate::support::webdriver::{Driver, Session};
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

/// Polls `GET path` with `token` until one of its items satisfies `pick` (at most `patience`);
/// that item.
async fn wait_for_item(
    stack: &super::Stack,
    path: &str,
    token: &str,
    patience: Duration,
    pick: impl Fn(&Value) -> bool,
) -> Value {
    let has = |list: &Value| {
        list["items"]
            .as_array()
            .is_some_and(|i| i.iter().any(&pick))
    };
    let list = wait_for(stack, path, token, patience, has).await;
    let items = list["items"].as_array().expect("a list");
    items.iter().find(|i| pick(i)).expect("the item").clone()
}

/// A review item (a payment naming an invoice that does not exist) and, once two receives 30 s
/// apart have failed, a dead letter (an invoice.paid rule whose target is down, and a payment
/// that closes one): the dead letter and the review item.
async fn a_review_item_and_a_dead_letter(
    stack: &super::Stack,
    (key, url, secret): &(String, String, String),
    org: &str,
) -> (Value, Value) {
    let post = reqwest::Method::POST;
    let unknown = json!({"type": "payment.succeeded", "data": {"payment_id": "pay_ops_unknown",
        "invoice_id": "inv_0000000000000000", "amount": "5.00", "currency": "UAH"}});
    let delivered = stack
        .deliver(url, secret, "msg_ops_1", &unknown.to_string())
        .await;
    assert_eq!(delivered.0, 200);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let target = json!({"kind": "outbound", "url": format!("http://127.0.0.1:{port}/hook")});
    let (_, outbound) = stack
        .api(post.clone(), "/api/integrations", key, target)
        .await;
    let rule = json!({"trigger": "invoice.paid", "action": {"type": "send_message",
        "integration_id": outbound["integration_id"], "text": "Thank you"}});
    assert_eq!(
        stack.api(post.clone(), "/api/rules", key, rule).await.0,
        201
    );
    let ten = json!({"currency": "UAH", "gross": "10.00"});
    let (_, invoice) = stack.api(post.clone(), "/api/invoices", key, ten).await;
    let paying = json!({"type": "payment.succeeded", "data": {"payment_id": "pay_ops_1",
        "invoice_id": invoice["id"], "amount": "10.00", "currency": "UAH"}});
    for _ in 0..2 {
        let delivered = stack
            .deliver(url, secret, "msg_ops_2", &paying.to_string())
            .await;
        assert_eq!(delivered.0, 200);
    }
    let admin = &stack.admin_token;
    let mine = |m: &Value| m["body"]["org"] == org;
    let dlq = "/ops/dlq/automation?limit=200";
    let letter = wait_for_item(stack, dlq, admin, Duration::from_secs(150), mine).await;
    let open = format!("/ops/review?state=open&org={org}");
    let unknown_invoice = |r: &Value| r["reason"] == "unknown_invoice";
    let item = wait_for_item(
        stack,
        &open,
        admin,
        Duration::from_secs(10),
        unknown_invoice,
    )
    .await;
    (letter, item)
}

/// The page's payment numbers and open review count are the API's.
async fn the_numbers_are_the_apis(stack: &super::Stack, page: &Session, org: &str) {
    let path = format!("/ops/summary?org={org}");
    let (_, summary) = stack
        .api(reqwest::Method::GET, &path, &stack.admin_token, Value::Null)
        .await;
    let cells = page
        .run("return Array.from(document.querySelectorAll('#events-summary tr[data-kind=payment] td')).map(td => td.textContent)")
        .await;
    let payment = &summary["events"]["payment"];
    let numbers = ["today", "week", "waiting"].map(|n| payment[n].to_string());
    assert_eq!(
        cells.as_array().map(|c| &c[..4]),
        Some(
            &json!(["payment", numbers[0], numbers[1], numbers[2]])
                .as_array()
                .unwrap()[..]
        ),
        "{summary}"
    );
    assert_eq!(
        page.text(&page.find("#review-open").await).await,
        summary["review"]["open"].to_string()
    );
    assert!(payment["today"].as_u64().unwrap() >= 1);
}

/// The events list filtered on the page by a provider's payment id, then a window's bulk replay
/// counted first: the confirmation shows the API's dry run, and cancelling sends nothing.
async fn filter_and_count_a_replay(stack: &super::Stack, page: &Session, org: &str) {
    page.click(&page.find("#events-kind option[value='payment']").await)
        .await;
    page.type_into(&page.find("#events-q").await, "pay_ops_unknown")
        .await;
    page.click(&page.find("#events-filter button").await).await;
    page.until("return document.querySelectorAll('#events tbody tr[data-id]').length === 1")
        .await;
    let key = page
        .run("return document.querySelector('#events tbody tr[data-id] td.key').textContent")
        .await;
    assert!(key.as_str().unwrap().ends_with("pay_ops_unknown"), "{key}");
    // The last hour, as the inputs take it (UTC, to the second).
    let now = chrono::Utc::now();
    let local = |t: chrono::DateTime<chrono::Utc>| t.format("%Y-%m-%dT%H:%M:%S").to_string();
    let (from, to) = (
        now - chrono::Duration::hours(1),
        now + chrono::Duration::minutes(1),
    );
    page.run(&format!(
        "document.getElementById('events-from').value = '{}'; document.getElementById('events-to').value = '{}'; document.getElementById('events-q').value = '';",
        local(from),
        local(to)
    ))
    .await;
    let window = json!({"kind": "payment", "dry_run": true,
        "from": format!("{}.000Z", local(from)), "to": format!("{}.000Z", local(to))});
    let (status, counted) = stack
        .api_with_key(
            &format!("/ops/events/replay?org={org}"),
            &stack.admin_token,
            &format!("e2e-dry-run-{}", now.timestamp_millis()),
            window,
        )
        .await;
    assert_eq!(status, 200, "{counted}");
    page.click(&page.find("#bulk-replay").await).await;
    page.until("return !document.getElementById('bulk-confirm').hidden")
        .await;
    let shown = page.text(&page.find("#bulk-count").await).await;
    assert!(
        shown.starts_with(&format!("{} events in this window", counted["events"])),
        "{shown} / {counted}"
    );
    page.click(&page.find("#bulk-cancel").await).await;
    page.until("return document.getElementById('bulk-confirm').hidden")
        .await;
}

/// The review item resolved on the page, with a note, as the admin.
async fn resolve_on_the_page(stack: &super::Stack, page: &Session, org: &str, item_id: &str) {
    let row = format!("#review tr[data-id='{item_id}']");
    page.type_into(
        &page.find(&format!("{row} input.note")).await,
        "checked in the browser",
    )
    .await;
    page.click(&page.find(&format!("{row} button.resolve")).await)
        .await;
    page.until(&format!("return !document.querySelector(\"{row}\")"))
        .await;
    let resolved = format!("/ops/review?state=resolved&org={org}");
    let this = |r: &Value| r["id"] == item_id;
    let done = wait_for_item(
        stack,
        &resolved,
        &stack.admin_token,
        Duration::from_secs(10),
        this,
    )
    .await;
    assert_eq!(
        (done["resolved_by"].as_str(), done["note"].as_str()),
        (
            Some(admin_name(&stack.admin_token).await.as_str()),
            Some("checked in the browser")
        )
    );
}

/// A model's proposal (a `payment_proposed` item, put into the deployed table as the AI step
/// files it) applied on the page after reading its cause (the sender, the message, a warning
/// that the invoice is not the sender's): the invoice is paid through the one payment function.
async fn apply_on_the_page(stack: &super::Stack, page: &Session, key: &str, org: &str) {
    let twenty = json!({"currency": "UAH", "gross": "20.00"});
    let (_, invoice) = stack
        .api(reqwest::Method::POST, "/api/invoices", key, twenty)
        .await;
    let coords: Value = serde_json::from_str(
        &std::fs::read_to_string(std::env::var("FIRMSPACE_TEST_STACK").unwrap()).unwrap(),
    )
    .unwrap();
    let client = aws_sdk_dynamodb::Client::new(&crate::support::sdk_config().await);
    let store = firmspace::store::Store::new(client, coords["table"].as_str().unwrap());
    let org_id = firmspace::ids::OrgId::parse(org).unwrap();
    let proposal = firmspace::review::ReviewItem {
        org: org_id,
        kind: firmspace::review::Kind::Payment,
        reason: firmspace::review::Reason::PaymentProposed,
        key: "rule_e2e:call_1".into(),
        at: chrono::Utc::now(),
        detail: json!({"invoice_id": invoice["id"], "invoice_number": invoice["number"],
            "amount": "20.00", "currency": "UAH", "rule_id": "rule_e2e", "event_key": "message:e2e:1",
            "open_now": "20.00", "trigger": {"event_key": "message:e2e:1", "conversation_id": "cv_e2e",
                "sender": {"contact_id": "ct_e2e", "name": "Olena <b>K</b>"},
                "text": "I paid the invoice in cash yesterday", "invoice_contact_id": null,
                "sender_is_invoice_contact": false}}),
    };
    assert!(proposal.put(&store).await.unwrap());
    let id = firmspace::ops::ids::encode(&proposal.pk());
    let row = format!("#review tr[data-id='{id}']");
    page.click(&page.find("#refresh").await).await;
    page.until(&format!(
        "return !!document.querySelector(\"{row} button.apply\")"
    ))
    .await;
    assert!(
        page.run(&format!(
            "return !!document.querySelector(\"{row} button.dismiss\")"
        ))
        .await
            == json!(true)
    );
    let cause = page.text(&page.find(&format!("{row} .cause")).await).await;
    for shown in [
        "From Olena <b>K</b> in cv_e2e",
        "I paid the invoice in cash yesterday",
        "The invoice owes 20.00 UAH now.",
        "This invoice is not the sender's.",
    ] {
        assert!(cause.contains(shown), "{shown:?} in {cause:?}");
    }
    let about = page.text(&page.find(&format!("{row} .about")).await).await;
    assert!(about.contains("from Olena <b>K</b>"), "{about}");
    page.click(&page.find(&format!("{row} button.apply")).await)
        .await;
    page.until(&format!("return !document.querySelector(\"{row}\")"))
        .await;
    let path = format!("/api/invoices/{}", invoice["id"].as_str().unwrap());
    let (_, paid) = stack
        .api(reqwest::Method::GET, &path, key, Value::Null)
        .await;
    assert_eq!(
        (paid["paid"].as_str(), paid["status"].as_str()),
        (Some("20.00"), Some("paid")),
        "{paid}"
    );
    // Lookalike money: the page names the earlier payment, and a person says they are two.
    let lookalike = firmspace::review::ReviewItem {
        org: firmspace::ids::OrgId::parse(org).unwrap(),
        kind: firmspace::review::Kind::Payment,
        reason: firmspace::review::Reason::PossibleSameMoney,
        key: "payment:bank:row_e2e".into(),
        at: chrono::Utc::now(),
        detail: json!({"invoice_id": invoice["id"], "invoice_number": invoice["number"],
            "amount": "20.00", "currency": "UAH", "lookalikes": [{"event_key": "payment:stripe:pi_e2e",
            "source": "stripe", "external_id": "pi_e2e", "amount": "20.00", "at": "2026-12-05T10:00:00Z"}]}),
    };
    assert!(lookalike.put(&store).await.unwrap());
    let id = firmspace::ops::ids::encode(&lookalike.pk());
    let row = format!("#review tr[data-id='{id}']");
    page.click(&page.find("#refresh").await).await;
    page.until(&format!(
        "return !!document.querySelector(\"{row} button.distinct\")"
    ))
    .await;
    let cause = page.text(&page.find(&format!("{row} .cause")).await).await;
    assert!(cause.contains("stripe pi_e2e"), "{cause}");
    page.click(&page.find(&format!("{row} button.distinct")).await)
        .await;
    page.until(&format!("return !document.querySelector(\"{row}\")"))
        .await;
    use firmspace::store::item::Read;
    let stored = store.get(&lookalike.pk()).await.unwrap().unwrap();
    assert_eq!(
        (stored.opt_str("state"), stored.opt_str("decision")),
        (Some("resolved"), Some("distinct"))
    );
}

/// The automation queue's dead letters redriven from the page; a screenshot of the page before.
async fn redrive_on_the_page(stack: &super::Stack, page: &Session, letter_id: &str) -> Vec<u8> {
    page.click(&page.find("#dlq-queue option[value='automation']").await)
        .await;
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
    let gone = |d: &Value| {
        d["items"]
            .as_array()
            .is_some_and(|items| !items.iter().any(|m| m["id"] == letter_id))
    };
    let dlq = "/ops/dlq/automation?limit=200";
    let after = wait_for(
        stack,
        dlq,
        &stack.admin_token,
        Duration::from_secs(10),
        gone,
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
    shot
}

#[tokio::test]
async fn in_a_real_browser_the_page_shows_the_apis_numbers_resolves_and_redrives() {
    let stack = stack();
    let admin = stack.admin_token.clone();
    let org_hook = stack.org_with_integration().await;
    let org = org_hook
        .0
        .split('_')
        .nth(1)
        .expect("fsk_{org}_{secret}")
        .to_owned();
    let (letter, item) = a_review_item_and_a_dead_letter(&stack, &org_hook, &org).await;
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
    the_numbers_are_the_apis(&stack, &page, &org).await;
    filter_and_count_a_replay(&stack, &page, &org).await;
    resolve_on_the_page(&stack, &page, &org, item_id).await;
    apply_on_the_page(&stack, &page, &org_hook.0, &org).await;
    let shot = redrive_on_the_page(&stack, &page, letter["id"].as_str().unwrap()).await;
    page.close().await;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/ops-page.png");
    std::fs::write(&path, &shot).expect("the screenshot is written");
    let written = std::fs::read(&path).unwrap();
    assert!(
        written.starts_with(b"\x89PNG\r\n\x1a\n") && written.len() > 20_000,
        "{} bytes",
        written.len()
    );
    stack.answers_follow_the_document().await;
}

/// The admin token's record name, keyed by the deployed stack's `DigestKey`.
async fn admin_name(token: &str) -> String {
    let coords: Value = serde_json::from_str(
        &std::fs::read_to_string(std::env::var("FIRMSPACE_TEST_STACK").unwrap()).unwrap(),
    )
    .unwrap();
    let kms = aws_sdk_kms::Client::new(&crate::support::sdk_config().await);
    let digests = firmspace::vault::Digests::new(kms, coords["digest_key"].as_str().unwrap());
    firmspace::admin::admin_id(&digests, token).await.unwrap()
}
