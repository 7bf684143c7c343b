//! The wallet's top-ups and finance's export through the api.

use super::{event, Carrier};
use crate::support::body_text;
use chrono::{Duration, Utc};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};

#[tokio::test]
async fn a_top_up_is_booked_once_per_key_and_the_first_sets_the_currency() {
    let c = Carrier::new().await;
    let empty = c.wallet().await;
    assert_eq!(
        empty,
        json!({"balance": "0.00", "currency": null, "version": 0})
    );
    let twenty = json!({"amount": "20.00", "currency": "USD"});
    let (status, missing) = c.call("POST", "/api/wallet/topups", twenty).await;
    assert_eq!(
        (status, missing["error"].as_str()),
        (400, Some("missing_idempotency_key"))
    );

    let (status, first) = c.top_up("k1", "20.00").await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["duplicate"], false);
    assert_eq!(
        first["wallet"],
        json!({"balance": "20.00", "currency": "USD", "version": 1})
    );
    let (_, again) = c.top_up("k1", "20.00").await;
    assert_eq!(again["duplicate"], true);
    assert_eq!(
        (again["ledger_id"].clone(), again["wallet"].clone()),
        (first["ledger_id"].clone(), first["wallet"].clone())
    );
    let (status, reused) = c.top_up("k1", "25.00").await;
    assert_eq!(
        (status, reused["error"].as_str()),
        (409, Some("idempotency_key_reused"))
    );
    let euros = json!({"amount": "5.00", "currency": "EUR"});
    let headers = [("idempotency-key", "k2")];
    let (status, other) = c
        .call_with("POST", "/api/wallet/topups", &headers, euros)
        .await;
    assert_eq!(
        (status, other["error"].as_str()),
        (400, Some("currency_mismatch"))
    );
    for (amount, code) in [
        ("0", "invalid_amount"),
        ("1000000.01", "invalid_amount"),
        ("1.001", "invalid_amount"),
        ("-5", "invalid_amount"),
    ] {
        let (status, bad) = c.top_up("k3", amount).await;
        assert_eq!(
            (status, bad["error"].as_str()),
            (400, Some(code)),
            "{amount}"
        );
    }
    assert_eq!(
        c.wallet().await,
        json!({"balance": "20.00", "currency": "USD", "version": 1})
    );
    assert_eq!(c.env.count("ledger_line").await, 1);
    let (_, review) = c.get("/api/review").await;
    assert_eq!(review["items"][0]["reason"], "idempotency_key_reused");

    // Concurrent top-ups under different keys: each once, none lost.
    let adds = futures::future::join_all((0..10).map(|i| {
        let c = &c;
        async move { c.top_up(&format!("c{i}"), "1.00").await.0 }
    }))
    .await;
    assert!(adds.iter().all(|s| *s == 200), "{adds:?}");
    assert_eq!(
        c.wallet().await,
        json!({"balance": "30.00", "currency": "USD", "version": 11})
    );
}

/// Parses the CSV export: (header, rows as column → cell).
fn rows(text: &str) -> (Vec<String>, Vec<HashMap<String, String>>) {
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_owned)
        .collect();
    let rows = reader
        .records()
        .map(|r| {
            header
                .iter()
                .cloned()
                .zip(r.unwrap().iter().map(str::to_owned))
                .collect()
        })
        .collect();
    (header, rows)
}

/// `GET /api/ledger.csv` over `window`: its rows, under the columns finance reads.
async fn csv_export(c: &Carrier, window: &str) -> Vec<HashMap<String, String>> {
    let auth = format!("Bearer {}", c.key);
    let path = format!("/api/ledger.csv?{window}");
    let req = crate::support::request("GET", &path, &[("authorization", &auth)], Vec::new());
    let res = c.api.handle(req).await.unwrap();
    assert_eq!(res.status(), 200);
    assert!(res.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/csv"));
    // A finance file: opened as the CSV it is, and kept by no cache on its way.
    assert_eq!(
        (
            res.headers()["x-content-type-options"].to_str().unwrap(),
            res.headers()["cache-control"].to_str().unwrap()
        ),
        ("nosniff", "no-store")
    );
    let (header, rows) = rows(&body_text(&res));
    assert_eq!(
        header,
        [
            "ledger_id",
            "event_id",
            "message_id",
            "inbox_id",
            "kind",
            "amount",
            "currency",
            "at",
            "refunds"
        ]
    );
    rows
}

#[tokio::test]
async fn the_export_holds_one_debit_and_one_inbox_line_per_event_id() {
    let c = Carrier::new().await;
    let started = Utc::now() - Duration::seconds(1);
    c.top_up("k1", "10.00").await;
    for i in 0..6 {
        let body = event("sent", &format!("SM{i}"), Some("0.05"));
        let id = format!("evt_{i}");
        // Each event delivered twice, and re-pushed once under another event id.
        c.send(&id, &body).await;
        c.send(&id, &body).await;
        c.send(&format!("{id}_repush"), &body).await;
    }
    c.send("evt_fail", &event("failed", "SM0", None)).await;
    let to = Utc::now() + Duration::seconds(1);
    let window =
        format!("from={}&to={}", started.to_rfc3339(), to.to_rfc3339()).replace('+', "%2B");
    let rows = csv_export(&c, &window).await;
    let debits: Vec<&HashMap<String, String>> =
        rows.iter().filter(|r| r["kind"] == "debit").collect();
    assert_eq!(debits.len(), 6);
    let events: HashSet<&str> = debits.iter().map(|r| r["event_id"].as_str()).collect();
    let inbox_ids: HashSet<&str> = debits.iter().map(|r| r["inbox_id"].as_str()).collect();
    let messages: HashSet<&str> = debits.iter().map(|r| r["message_id"].as_str()).collect();
    assert_eq!(
        (events.len(), inbox_ids.len(), messages.len()),
        (6, 6, 6),
        "one debit and one inbox line per event id"
    );
    assert!(
        events.iter().all(|e| !e.ends_with("_repush")),
        "a re-push booked nothing"
    );
    let refunds: Vec<_> = rows.iter().filter(|r| r["kind"] == "refund").collect();
    assert_eq!(
        (
            refunds.len(),
            refunds[0]["event_id"].as_str(),
            refunds[0]["message_id"].as_str()
        ),
        (1, "evt_fail", "SM0")
    );
    let given_back = debits.iter().find(|d| d["message_id"] == "SM0").unwrap();
    assert_eq!(
        refunds[0]["refunds"], given_back["ledger_id"],
        "a refund line names the debit it gives back"
    );
    assert!(debits.iter().all(|d| d["refunds"].is_empty()));
    assert_eq!(rows.iter().filter(|r| r["kind"] == "topup").count(), 1);
    each_debit_is_one_inbox_line(&c, &debits).await;
    the_json_export_agrees(&c, &rows, started, &window).await;
}

/// Every inbox id of the export is one line of the inbox, holding its event id.
async fn each_debit_is_one_inbox_line(c: &Carrier, debits: &[&HashMap<String, String>]) {
    let inbox = c.inbox().await;
    assert_eq!(inbox.len(), 6);
    for debit in debits {
        let line = inbox
            .iter()
            .find(|l| l["inbox_id"] == debit["inbox_id"].as_str())
            .expect("the debit's inbox line");
        assert!(line["event_ids"]
            .as_array()
            .unwrap()
            .contains(&Value::from(debit["event_id"].as_str())));
    }
}

/// The JSON export says the same as the CSV's `rows`; the window's ends hold (`to` exclusive).
async fn the_json_export_agrees(
    c: &Carrier,
    rows: &[HashMap<String, String>],
    started: chrono::DateTime<Utc>,
    window: &str,
) {
    let (status, listed) = c.get(&format!("/api/ledger?{window}")).await;
    assert_eq!(status, 200);
    let ids: Vec<&str> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["ledger_id"].as_str().unwrap())
        .collect();
    let csv_ids: Vec<&str> = rows.iter().map(|r| r["ledger_id"].as_str()).collect();
    assert_eq!(ids, csv_ids);
    let before = format!(
        "from={}&to={}",
        (started - Duration::hours(1)).to_rfc3339(),
        started.to_rfc3339()
    )
    .replace('+', "%2B");
    assert_eq!(
        c.get(&format!("/api/ledger?{before}")).await.1["items"],
        json!([])
    );
    let (_, paged) = c.get(&format!("/api/ledger?{window}&limit=3")).await;
    assert_eq!(paged["items"].as_array().unwrap().len(), 3);
    let cursor = paged["cursor"].as_str().expect("more remain");
    let (_, rest) = c
        .get(&format!("/api/ledger?{window}&limit=10&cursor={cursor}"))
        .await;
    assert_eq!(rest["items"].as_array().unwrap().len(), ids.len() - 3);
    // A position outside the window is one this list never gave: 400, not DynamoDB's refusal.
    let outside = crate::support::forged_cursor(cursor, "sk", "1999-01-01T00:00:00Z#x");
    let (status, refused) = c
        .get(&format!("/api/ledger?{window}&limit=10&cursor={outside}"))
        .await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("invalid_cursor"))
    );
    for (query, code) in [
        ("", "missing_window"),
        ("from=yesterday&to=today", "invalid_window"),
        (&window.replace("from=", "to=x&from="), "invalid_window"),
    ] {
        let (status, bad) = c.get(&format!("/api/ledger?{query}")).await;
        assert_eq!(
            (status, bad["error"].as_str()),
            (400, Some(code)),
            "{query}"
        );
    }
}

#[tokio::test]
async fn a_sent_after_its_failure_lists_its_debit_before_its_refund_and_ends_at_the_wallet() {
    let c = Carrier::new().await;
    let started = Utc::now() - Duration::seconds(1);
    c.top_up("k-order", "10.00").await;
    // A failure first, then its priced sent: the debit and its refund in one event, one time.
    for i in 0..12 {
        let id = format!("SMO{i}");
        c.send(&format!("evt_f{i}"), &event("failed", &id, None))
            .await;
        c.send(&format!("evt_s{i}"), &event("sent", &id, Some("0.05")))
            .await;
    }
    let to = Utc::now() + Duration::seconds(1);
    let window =
        format!("from={}&to={}", started.to_rfc3339(), to.to_rfc3339()).replace('+', "%2B");
    let (status, listed) = c.get(&format!("/api/ledger?{window}")).await;
    assert_eq!(status, 200, "{listed}");
    let lines = listed["items"].as_array().unwrap();
    assert_eq!(
        lines.len(),
        25,
        "a top-up, twelve debits and twelve refunds"
    );
    for pair in lines[1..].chunks(2) {
        assert_eq!(
            (pair[0]["kind"].as_str(), pair[1]["kind"].as_str()),
            (Some("debit"), Some("refund")),
            "{pair:?}"
        );
        assert_eq!(pair[0]["message_id"], pair[1]["message_id"]);
    }
    let wallet = c.wallet().await;
    assert_eq!(
        lines.last().unwrap()["balance_after"],
        wallet["balance"],
        "the last line's balance is the wallet's"
    );
}
