//! The carrier's edge: hostile deliveries and top-ups write nothing, and what one event costs.

use super::{event, Carrier};
use crate::hostile::assert_refused;
use crate::support::app::post;
use crate::support::request;
use chrono::Utc;

/// Deliveries whose signature, timestamp, size or address is wrong.
fn hostile_deliveries(c: &Carrier) -> Vec<(&'static str, lambda_http::Request)> {
    let body = event("sent", "SM1", Some("0.05"));
    let path = format!("/hooks/{}/sms", c.integration_id);
    let now = Utc::now().timestamp();
    let signed = c.delivery("evt_1", &body);
    let header = |name: &str| signed.headers()[name].to_str().unwrap().to_owned();
    let (sig, ts) = (header("webhook-signature"), header("webhook-timestamp"));
    let with = |id: &str, ts: &str, sig: &str, raw: Vec<u8>| {
        let headers = [
            ("webhook-id", id),
            ("webhook-timestamp", ts),
            ("webhook-signature", sig),
        ];
        post(&path, &headers, raw)
    };
    let raw = body.to_string().into_bytes();
    let mut tampered = body.clone();
    tampered["data"]["price"] = "0.01".into();
    let cheaper = tampered.to_string().into_bytes();
    let nowhere = "/hooks/o0123456789ab_0123456789abcdef/sms";
    vec![
        ("no signature headers", post(&path, &[], raw.clone())),
        (
            "another event id under the signature",
            with("evt_2", &ts, &sig, raw.clone()),
        ),
        (
            "a cheaper price under the signature",
            with("evt_1", &ts, &sig, cheaper),
        ),
        (
            "signed 6 minutes ago",
            c.delivery_at("evt_3", &body, now - 360),
        ),
        (
            "signed 6 minutes ahead",
            c.delivery_at("evt_4", &body, now + 360),
        ),
        (
            "timestamp not a number",
            with("evt_1", "soon", &sig, raw.clone()),
        ),
        (
            "body over 256 KiB",
            with("evt_1", &ts, &sig, vec![b' '; 300 * 1024]),
        ),
        ("an unknown integration", post(nowhere, &[], raw.clone())),
        ("GET", request("GET", &path, &[], Vec::new())),
    ]
}

#[tokio::test]
async fn hostile_carrier_deliveries_and_top_ups_get_a_4xx_of_ours_and_write_nothing() {
    let c = Carrier::new().await;
    c.top_up("top-1", "5.00").await;
    let cases = hostile_deliveries(&c);
    let before = c.table_snapshot().await;
    for (case, req) in cases {
        let (status, answer) = c.answer(req).await;
        assert_refused(case, status, &answer);
    }
    let top_ups: Vec<(&str, &str)> = vec![
        ("not JSON", "{"),
        // A JSON number is an amount read from its text; one with an exponent is not.
        (
            "amount with an exponent",
            r#"{"amount": 2e1, "currency": "USD"}"#,
        ),
        ("no currency", r#"{"amount": "20.00"}"#),
        (
            "a currency that is not ISO 4217",
            r#"{"amount": "20.00", "currency": "XXX"}"#,
        ),
        (
            "an amount with words",
            r#"{"amount": "twenty", "currency": "USD"}"#,
        ),
        (
            "an amount beyond the limit",
            r#"{"amount": "99999999999.00", "currency": "USD"}"#,
        ),
    ];
    let auth = format!("Bearer {}", c.key);
    for (case, raw) in top_ups {
        let headers = [
            ("authorization", auth.as_str()),
            ("idempotency-key", "k-bad"),
        ];
        let req = post("/api/wallet/topups", &headers, raw);
        let res = c.api.handle(req).await.unwrap();
        assert_refused(case, res.status().as_u16(), &crate::support::json_of(&res));
    }
    assert_eq!(c.table_snapshot().await, before, "nothing was written");
}

#[tokio::test]
async fn an_event_costs_one_read_and_one_transaction_and_a_repeat_one_read() {
    let c = Carrier::new().await;
    c.top_up("top-1", "5.00").await;
    // The first delivery loads the integration (a GetItem and a KMS Decrypt); then the warm path.
    c.send("evt_0", &event("sent", "SM0", Some("0.05"))).await;
    c.env.calls.clear();
    let body = event("sent", "SM1", Some("0.05"));
    let (status, first) = c.send("evt_1", &body).await;
    assert_eq!((status, first["duplicate"].as_bool()), (200, Some(false)));
    assert_eq!(
        c.env.calls.take(),
        ["BatchGetItem", "TransactWriteItems"],
        "one read of the event, the wallet, the inbox line and the integration (a message \
         without an inbox line has no ledger line); one transaction of the debit, the inbox \
         line, the wallet and the acknowledgement"
    );
    c.send("evt_1", &body).await;
    assert_eq!(
        c.env.calls.take(),
        ["BatchGetItem"],
        "a repeat is one read and no write"
    );
    c.send("evt_1_repush", &body).await;
    assert_eq!(
        c.env.calls.take(),
        ["BatchGetItem", "BatchGetItem", "PutItem"],
        "a re-push reads its message's lines too (its inbox line is there) and stores only its \
         acknowledgement (one conditional put, not a transaction); it is a duplicate, counted in \
         memory"
    );
    c.send("evt_2", &event("received", "MO1", None)).await;
    assert_eq!(
        c.env.calls.take(),
        ["BatchGetItem", "TransactWriteItems", "UpdateItem"],
        "an incoming SMS: one read with its conversation and sender, one transaction with its \
         message and lead; and the two duplicates counted before, written once"
    );
}
