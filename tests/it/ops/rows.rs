//! Rows a person recognises: each event's summary (a payment's invoice and amount, a lead's
//! name and source, a credit note's number and amount), the list's window and text filters, a
//! filtered list paged with its cursor, and the refusals.

use super::{org_by_key, Ops};
use crate::support::api::{call, call_with};
use crate::support::fixtures;
use chrono::{Duration, Utc};
use firmspace::ids::IntegrationId;
use firmspace::payments::providers::Provider;
use rust_decimal_macros::dec;
use serde_json::{json, Value};

fn items(list: &Value) -> &Vec<Value> {
    list["items"].as_array().expect("items")
}

fn keys(list: &Value) -> Vec<String> {
    items(list)
        .iter()
        .map(|i| i["key"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn each_row_says_what_it_is_and_the_list_finds_an_event_by_time_and_text() {
    let o = Ops::new().await;
    let (key, org) = org_by_key(&o).await;
    let member = json!({"user_id": "u1", "name": "Olena"});
    assert_eq!(
        call(&o.api, "POST", "/api/members", &key, member).await.0,
        201
    );
    let hook = fixtures::integration(&o.env, &org, Provider::Standard).await;
    let inv = fixtures::invoice(&o.env, &org, dec!(1000), "UAH").await;
    let payments = payment_webhook::app(o.env.store.clone());
    for i in 0..3 {
        let body = fixtures::standard_body(&format!("pi_3Nx{i}"), inv.id.as_str(), Some("12.50"));
        let req = fixtures::standard_request_with_id(
            &hook,
            &body,
            Utc::now().timestamp(),
            &format!("m{i}"),
        );
        assert_eq!(payments.handle(req).await.unwrap().status(), 200);
    }
    let number = inv.number.clone();

    // Payments: the invoice, the amount and the currency; the provider's id finds one.
    let (status, list) = o.get("/ops/events?kind=payment", &key).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(items(&list).len(), 3);
    assert_eq!(
        items(&list)[0]["summary"],
        json!(format!("{number} · 12.50 UAH"))
    );
    let (_, found) = o.get("/ops/events?kind=payment&q=PI_3NX1", &key).await;
    assert_eq!(keys(&found).len(), 1, "{found}");
    assert!(keys(&found)[0].ends_with("pi_3Nx1"), "{found}");
    let (_, by_number) = o
        .get(&format!("/ops/events?kind=payment&q={number}"), &key)
        .await;
    assert_eq!(items(&by_number).len(), 3);
    // Paged with the filter: one at a time, three pages, then no cursor.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..4 {
        let path = match &cursor {
            Some(c) => format!("/ops/events?kind=payment&q={number}&limit=1&cursor={c}"),
            None => format!("/ops/events?kind=payment&q={number}&limit=1"),
        };
        let (status, page) = o.get(&path, &key).await;
        assert_eq!(status, 200, "{page}");
        seen.extend(keys(&page));
        cursor = page["cursor"].as_str().map(str::to_owned);
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert!(cursor.is_none());
    // A window: the last hour holds them, the hour before none; `to` is exclusive.
    let at = |d: Duration| (Utc::now() + d).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let window = |from: &str, to: &str| format!("/ops/events?kind=payment&from={from}&to={to}");
    let (_, now) = o
        .get(
            &window(&at(Duration::hours(-1)), &at(Duration::minutes(1))),
            &key,
        )
        .await;
    assert_eq!(items(&now).len(), 3, "{now}");
    let (_, before) = o
        .get(
            &window(&at(Duration::hours(-2)), &at(Duration::hours(-1))),
            &key,
        )
        .await;
    assert_eq!(items(&before).len(), 0, "{before}");
    let first_at = items(&list)[2]["at"].as_str().unwrap().to_owned();
    let (_, up_to) = o
        .get(&window(&at(Duration::hours(-1)), &first_at), &key)
        .await;
    assert!(
        !keys(&up_to).contains(&keys(&list)[2]),
        "to is exclusive: {up_to}"
    );
    // One bound alone: the other side is open.
    for (path, listed) in [
        (format!("/ops/events?kind=payment&to={first_at}"), 0),
        (
            format!("/ops/events?kind=payment&to={}", at(Duration::minutes(1))),
            3,
        ),
        (
            format!("/ops/events?kind=payment&from={}", at(Duration::hours(-1))),
            3,
        ),
        (
            format!("/ops/events?kind=payment&from={}", at(Duration::minutes(1))),
            0,
        ),
    ] {
        let (status, page) = o.get(&path.replace('+', "%2B"), &key).await;
        assert_eq!(
            (status, items(&page).len()),
            (200, listed),
            "{path}: {page}"
        );
    }
    for bad in [
        window("yesterday", &at(Duration::zero())),
        window(&at(Duration::zero()), &at(Duration::hours(-1))),
        window(&at(Duration::zero()), &at(Duration::zero())),
    ] {
        let (status, refused) = o.get(&bad.replace('+', "%2B"), &key).await;
        assert_eq!(
            (status, refused["error"].as_str()),
            (400, Some("invalid_window")),
            "{bad}"
        );
    }

    // A lead: its name and source, its consequences listed.
    let created = call(
        &o.api,
        "POST",
        "/api/integrations",
        &key,
        json!({"kind": "leads", "provider": "standard"}),
    )
    .await
    .1;
    let form = IntegrationId::parse(created["integration_id"].as_str().unwrap()).unwrap();
    let body = json!({"type": "lead.submitted", "data": {"submission_id": "s-1",
        "name": "Olena Koval", "email": "olena@example.com", "source": "website"}})
    .to_string();
    let req = fixtures::signed_post(
        &form,
        "leads",
        created["secret"].as_str().unwrap(),
        "w-lead-1",
        Utc::now().timestamp(),
        &body,
    );
    let leads = lead_webhook::app(o.env.store.clone());
    let (status, _) = crate::support::app::deliver_at(&leads, &req, Utc::now()).await;
    assert_eq!(status, 201);
    let (_, leads) = o.get("/ops/events?kind=lead", &key).await;
    assert_eq!(
        items(&leads)[0]["summary"],
        "Olena Koval · website",
        "{leads}"
    );
    let kinds: Vec<&str> = items(&leads)[0]["consequences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["activity", "notification", "rule_run"], "{leads}");

    // A credit note: its number and amount.
    let path = format!("/api/invoices/{}/credit-notes", inv.id.as_str());
    let auth = format!("Bearer {key}");
    let headers = [
        ("authorization", auth.as_str()),
        ("idempotency-key", "cn-1"),
    ];
    let credit = json!({"amount": "5.00", "reason": "returned"});
    let (status, note) = call_with(&o.api, "POST", &path, &headers, credit).await;
    assert_eq!(status, 201, "{note}");
    let (_, notes) = o.get("/ops/events?kind=credit_note", &key).await;
    assert_eq!(
        items(&notes)[0]["summary"],
        json!(format!("{} · 5.00 UAH", note["number"].as_str().unwrap())),
        "{notes}"
    );
    let (_, summary) = o.get("/ops/summary", &key).await;
    assert_eq!(
        summary["events"]["lead"]["today"], 0,
        "counted once the fan-out reads it: {summary}"
    );
    o.streamed().await;
    let (_, summary) = o.get("/ops/summary", &key).await;
    assert_eq!(summary["events"]["lead"]["today"], 1, "{summary}");
    // Read by the fan-out: no queue carries what it implies, so it waits on nothing.
    assert_eq!(summary["events"]["credit_note"]["waiting"], 0, "{summary}");
}
