//! One event id, one debit line, one inbox line: concurrent copies, re-pushes under new event
//! ids, stale signatures, failures, and statuses out of order.

use super::{event, Carrier};
use chrono::Utc;
use futures::future::join_all;
use serde_json::Value;

#[tokio::test]
async fn fifty_concurrent_copies_of_one_sent_are_one_debit_one_line_and_one_balance_move() {
    let c = Carrier::new().await;
    assert_eq!(c.top_up("top-1", "20.00").await.0, 200);
    let body = event("sent", "SM100", Some("0.05"));
    // Fifty copies of the very same signed delivery, all at once.
    let req = || c.delivery("evt_sent_1", &body);
    let answers = join_all((0..50).map(|_| c.answer(req()))).await;
    assert!(answers.iter().all(|(s, _)| *s == 200), "{answers:?}");
    let ledger_id = answers[0].1["ledger_id"].as_str().unwrap().to_owned();
    let inbox_id = answers[0].1["inbox_id"].as_str().unwrap().to_owned();
    assert!(answers
        .iter()
        .all(|(_, a)| a["ledger_id"] == ledger_id.as_str()
            && a["inbox_id"] == inbox_id.as_str()
            && a["ack"] == "evt_sent_1"));
    let firsts = answers
        .iter()
        .filter(|(_, a)| a["duplicate"] == false)
        .count();
    assert_eq!(firsts, 1, "one copy booked, 49 got the stored answer");
    assert!(answers.iter().all(|(_, a)| a["balance"] == "19.95"));
    assert_eq!(
        c.env.count("ledger_line").await,
        2,
        "the top-up and one debit"
    );
    assert_eq!(c.env.count("inbox_row").await, 1);
    let wallet = c.wallet().await;
    assert_eq!(
        (wallet["balance"].as_str(), wallet["version"].as_u64()),
        (Some("19.95"), Some(2))
    );

    // The carrier re-pushes the message under a new event id: the same lines, nothing new.
    let (status, again) = c.send("evt_sent_1_repush", &body).await;
    assert_eq!(status, 200);
    assert_eq!(
        (
            again["duplicate"].as_bool(),
            again["ledger_id"].as_str(),
            again["inbox_id"].as_str()
        ),
        (
            Some(true),
            Some(ledger_id.as_str()),
            Some(inbox_id.as_str())
        )
    );
    assert_eq!(again["ack"], "evt_sent_1_repush");
    // A repeat of the re-push gets its own stored answer.
    assert_eq!(c.send("evt_sent_1_repush", &body).await.1, again);
    assert_eq!(c.env.count("ledger_line").await, 2);
    assert_eq!(c.env.count("inbox_row").await, 1);
    assert_eq!(
        c.wallet().await["version"],
        2,
        "the balance was not touched"
    );

    // A delivery signed six minutes ago is refused before anything is read, and writes nothing.
    let before = c.env.items().await.len();
    let stale = c.delivery_at(
        "evt_stale",
        &event("sent", "SM101", Some("0.05")),
        Utc::now().timestamp() - 360,
    );
    let (status, refused) = c.answer(stale).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (401, Some("invalid_signature"))
    );
    assert!(
        refused["detail"].as_str().unwrap().contains("5-minute"),
        "{refused}"
    );
    assert_eq!(c.env.items().await.len(), before);
    assert_eq!(c.wallet().await["balance"], "19.95");
}

#[tokio::test]
async fn a_failure_refunds_once_and_every_status_stays_where_it_belongs() {
    let c = Carrier::new().await;
    c.top_up("top-1", "1.00").await;
    // Sent, then failed twice under two event ids: one refund.
    c.send("e1", &event("sent", "SM1", Some("0.05"))).await;
    let (_, failed) = c.send("e2", &event("failed", "SM1", None)).await;
    assert_eq!(
        (failed["duplicate"].as_bool(), failed["status"].as_str()),
        (Some(false), Some("failed"))
    );
    let (_, twice) = c.send("e3", &event("failed", "SM1", None)).await;
    assert_eq!(twice["duplicate"], true);
    assert_eq!(twice["ledger_id"], failed["ledger_id"], "the refund's line");
    // Delivered after failed: the first final status wins, and a person is told.
    let (_, late) = c.send("e4", &event("delivered", "SM1", None)).await;
    assert_eq!(
        (late["status"].as_str(), late["review"][0].as_str()),
        (Some("failed"), Some("status_conflict"))
    );
    assert_eq!(c.wallet().await["balance"], "1.00", "debit and refund");

    // Sent, delivered, then the sent re-pushed: delivered stays.
    c.send("e5", &event("sent", "SM2", Some("0.05"))).await;
    c.send("e6", &event("delivered", "SM2", None)).await;
    let (_, sent_again) = c.send("e7", &event("sent", "SM2", Some("0.05"))).await;
    assert_eq!(
        (
            sent_again["duplicate"].as_bool(),
            sent_again["status"].as_str()
        ),
        (Some(true), Some("delivered"))
    );

    // Delivered before its sent: the line in `delivered` without a debit; the sent books the
    // debit and leaves the status.
    let (_, early) = c.send("e8", &event("delivered", "SM3", None)).await;
    assert_eq!(
        (early["ledger_id"].clone(), early["status"].as_str()),
        (Value::Null, Some("delivered"))
    );
    let (_, booked) = c.send("e9", &event("sent", "SM3", Some("0.05"))).await;
    assert_eq!(
        (booked["duplicate"].as_bool(), booked["status"].as_str()),
        (Some(false), Some("delivered"))
    );
    assert!(booked["ledger_id"].is_string());

    the_inbox_and_wallet_hold_three_stories(&c).await;
}

/// SM1 failed, SM2 and SM3 delivered; five ledger lines; one status conflict for a person.
async fn the_inbox_and_wallet_hold_three_stories(c: &Carrier) {
    let inbox = c.inbox().await;
    let status_of = |m: &str| {
        inbox
            .iter()
            .find(|l| l["message_id"] == m)
            .map(|l| l["status"].as_str().unwrap().to_owned())
    };
    assert_eq!(
        (status_of("SM1"), status_of("SM2"), status_of("SM3")),
        (
            Some("failed".into()),
            Some("delivered".into()),
            Some("delivered".into())
        )
    );
    assert_eq!(inbox.len(), 3);
    let sm3 = inbox.iter().find(|l| l["message_id"] == "SM3").unwrap();
    let mut ids: Vec<&str> = sm3["event_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    ids.sort();
    assert_eq!(ids, ["e8", "e9"], "the events that wrote the line");
    let kinds = c.env.kinds().await;
    assert_eq!(
        kinds.get("ledger_line"),
        Some(&5),
        "top-up, three debits, one refund: {kinds:?}"
    );
    assert_eq!(c.wallet().await["balance"], "0.90");
    let (_, review) = c.get("/api/review").await;
    let reasons: Vec<&str> = review["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons, ["status_conflict"]);
}

#[tokio::test]
async fn a_price_in_fractions_of_a_cent_is_debited_exactly() {
    let c = Carrier::new().await;
    c.top_up("top-1", "1.00").await;
    let (status, sent) = c.send("e1", &event("sent", "SM1", Some("0.0075"))).await;
    assert_eq!(
        (status, sent["balance"].as_str()),
        (200, Some("0.9925")),
        "{sent}"
    );
    assert_eq!(sent.get("review"), None, "{sent}");
    assert_eq!(c.wallet().await["balance"], "0.9925");
}

#[tokio::test]
async fn a_debit_below_zero_is_booked_with_a_review_and_another_currency_moves_nothing() {
    let c = Carrier::new().await;
    c.top_up("top-1", "0.03").await;
    let (status, below) = c.send("e1", &event("sent", "SM1", Some("0.05"))).await;
    assert_eq!((status, below["balance"].as_str()), (200, Some("-0.02")));
    assert_eq!(below["review"][0], "negative_balance");
    let mut eur = event("sent", "SM2", Some("0.05"));
    eur["data"]["currency"] = "EUR".into();
    let (_, mismatch) = c.send("e2", &eur).await;
    assert_eq!(mismatch["review"][0], "currency_mismatch");
    assert_eq!(mismatch["balance"], "-0.02");
    let (_, review) = c.get("/api/review").await;
    let mut reasons: Vec<&str> = review["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["reason"].as_str().unwrap())
        .collect();
    reasons.sort();
    assert_eq!(reasons, ["currency_mismatch", "negative_balance"]);
    assert_eq!(
        c.env.count("ledger_line").await,
        3,
        "both SMS are booked for finance"
    );
}

#[tokio::test]
async fn an_event_that_breaks_a_limit_is_kept_for_a_person_and_books_nothing() {
    let c = Carrier::new().await;
    let mut body = event("sent", "SM1", Some("0.05"));
    // Five fraction digits: past what any amount may have.
    body["data"]["price"] = "0.05001".into();
    let (status, kept) = c.send("e1", &body).await;
    assert_eq!(
        (status, kept["status"].as_str()),
        (200, Some("unparseable"))
    );
    assert!(
        kept["detail"].as_str().unwrap().contains("data.price"),
        "{kept}"
    );
    let (status, ignored) = c
        .send("e2", &serde_json::json!({"type": "sms.queued", "data": {}}))
        .await;
    assert_eq!((status, ignored["status"].as_str()), (200, Some("ignored")));
    let kinds = c.env.kinds().await;
    assert_eq!(
        (kinds.get("ledger_line"), kinds.get("inbox_row")),
        (None, None),
        "{kinds:?}"
    );
}

#[tokio::test]
async fn an_incoming_sms_is_one_inbox_line_and_one_conversation_message() {
    let c = Carrier::new().await;
    let body = event("received", "MO1", None);
    let answers = join_all((0..5).map(|_| c.send("evt_mo_1", &body))).await;
    assert!(answers
        .iter()
        .all(|(s, a)| *s == 200 && a["inbox_id"] == answers[0].1["inbox_id"]));
    let (_, repush) = c.send("evt_mo_1_again", &body).await;
    assert_eq!(repush["duplicate"], true);
    let conversation = answers[0].1["conversation_id"].as_str().unwrap();
    let (_, messages) = c
        .get(&format!("/api/conversations/{conversation}/messages"))
        .await;
    let items = messages["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{messages}");
    assert_eq!(
        (items[0]["text"].as_str(), items[0]["direction"].as_str()),
        (Some("STOP"), Some("inbound"))
    );
    let kinds = c.env.kinds().await;
    assert_eq!(
        (
            kinds.get("inbox_row"),
            kinds.get("message"),
            kinds.get("contact"),
            kinds.get("ledger_line")
        ),
        (Some(&1), Some(&1), Some(&1), None),
        "one line, one message, one lead, no charge: {kinds:?}"
    );
    let inbox = c.inbox().await;
    assert_eq!(
        (inbox[0]["direction"].as_str(), inbox[0]["status"].as_str()),
        (Some("inbound"), Some("received"))
    );
}
