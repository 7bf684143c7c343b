//! A second debit is given back, not netted against later traffic: a person refunds the debit
//! line once (whatever the request's key, and never beside the message's own failure refund),
//! the wallet moves once, and the negative balance it raised is resolved.

use super::{event, Carrier};
use serde_json::{json, Value};

async fn refund(c: &Carrier, ledger_id: &str, key: &str, reason: &str) -> (u16, Value) {
    let path = format!("/api/ledger/{ledger_id}/refund");
    c.call_with(
        "POST",
        &path,
        &[("idempotency-key", key)],
        json!({"reason": reason}),
    )
    .await
}

#[tokio::test]
async fn a_debit_is_refunded_once_whatever_the_key_and_its_review_item_is_resolved() {
    let c = Carrier::new().await;
    assert_eq!(c.top_up("t-1", "0.05").await.0, 200);
    // Two messages at 0.05 from a 0.05 wallet: the second leaves it negative, for a person.
    let (_, first) = c.send("evt_1", &event("sent", "m-1", Some("0.05"))).await;
    let (_, second) = c.send("evt_2", &event("sent", "m-2", Some("0.05"))).await;
    assert_eq!(c.wallet().await["balance"], "-0.05");
    assert_eq!(c.reasons().await, ["negative_balance"]);
    let debit = second["ledger_id"].as_str().unwrap().to_owned();

    // Three requests under two keys, two at once: one refund line, the wallet moved once.
    let (a, b) = tokio::join!(
        refund(&c, &debit, "r-1", "charged twice"),
        refund(&c, &debit, "r-2", "charged twice")
    );
    let again = refund(&c, &debit, "r-1", "charged twice").await;
    let mut duplicates = vec![a.1["duplicate"].as_bool(), b.1["duplicate"].as_bool()];
    duplicates.sort();
    assert_eq!(duplicates, [Some(false), Some(true)], "{a:?} {b:?}");
    assert_eq!((a.0, b.0, again.0), (200, 200, 200));
    assert_eq!(again.1["ledger_id"], a.1["ledger_id"]);
    assert_eq!(a.1["refunds"], debit);
    assert_eq!(c.wallet().await["balance"], "0.00");
    let (status, reused) = refund(&c, &debit, "r-1", "another reason").await;
    assert_eq!(
        (status, reused["error"].as_str()),
        (409, Some("idempotency_key_reused"))
    );
    let review = c.review().await;
    let negative = review
        .iter()
        .find(|r| r["reason"] == "negative_balance")
        .unwrap();
    assert_eq!(negative["state"], "resolved", "{negative}");

    // The message's failure later finds it refunded: no second refund.
    let (status, _) = c.send("evt_3", &event("failed", "m-2", None)).await;
    assert_eq!(status, 200);
    assert_eq!(c.wallet().await["balance"], "0.00");
    let day = chrono::Duration::days(1);
    let (from, to) = (chrono::Utc::now() - day, chrono::Utc::now() + day);
    let window = format!(
        "/api/ledger?from={}&to={}",
        from.format("%Y-%m-%dT%H:%M:%SZ"),
        to.format("%Y-%m-%dT%H:%M:%SZ")
    );
    let (status, ledger) = c.get(&window).await;
    assert_eq!(status, 200, "{ledger}");
    let refunds = ledger["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["kind"] == "refund")
        .count();
    assert_eq!(refunds, 1);

    // A message whose failure refunded it first: a person's refund is that one.
    let failed_first = first["ledger_id"].as_str().unwrap().to_owned();
    c.send("evt_4", &event("failed", "m-1", None)).await;
    let (status, late) = refund(&c, &failed_first, "r-3", "failed").await;
    assert_eq!(
        (status, late["duplicate"].as_bool()),
        (200, Some(true)),
        "{late}"
    );
    assert_eq!(c.wallet().await["balance"], "0.05");

    // A top-up line is not a debit; an unknown id is 404.
    let (status, topup) = c.top_up("t-2", "1.00").await;
    assert_eq!(status, 200, "{topup}");
    let topup_line = topup["ledger_id"].as_str().expect("a top-up line");
    let (status, refused) = refund(&c, topup_line, "r-4", "no").await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (409, Some("not_a_debit"))
    );
    assert_eq!(refund(&c, "led_nope", "r-5", "no").await.0, 404);
}

/// A line is found by its id on an index, which may lag the table by a moment: a refund asked
/// before its debit is there is refused 404 and nothing of it is kept, so the same request
/// under the same key, once the line is written, refunds it.
#[tokio::test]
async fn a_refund_refused_before_its_debit_was_found_is_not_kept_under_its_key() {
    use firmspace::ledger::line::{ledger_id, message_line_pk};
    use firmspace::ledger::LineKind;
    use firmspace::messages::Direction;
    let c = Carrier::new().await;
    assert_eq!(c.top_up("t-lag", "1.00").await.0, 200);
    let pk = message_line_pk(
        &c.org,
        &c.integration_id,
        "m-lag",
        Direction::Outbound,
        LineKind::Debit,
    );
    let debit = ledger_id(&pk);
    let (status, refused) = refund(&c, &debit, "r-lag", "charged twice").await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (404, Some("not_found"))
    );

    let (status, sent) = c
        .send("evt_lag", &event("sent", "m-lag", Some("0.05")))
        .await;
    assert_eq!(
        (status, sent["ledger_id"].as_str()),
        (200, Some(debit.as_str()))
    );
    let (status, refunded) = refund(&c, &debit, "r-lag", "charged twice").await;
    assert_eq!(
        (
            status,
            refunded["refunds"].as_str(),
            refunded["duplicate"].as_bool()
        ),
        (200, Some(debit.as_str()), Some(false)),
        "{refunded}"
    );
    assert_eq!(c.wallet().await["balance"], "1.00");
}

#[tokio::test]
async fn a_debit_its_failure_gave_back_is_answered_with_why_and_the_wallet() {
    let c = Carrier::new().await;
    assert_eq!(c.top_up("t-f", "1.00").await.0, 200);
    let (_, sent) = c.send("evt_s", &event("sent", "m-f", Some("0.05"))).await;
    let debit = sent["ledger_id"].as_str().unwrap().to_owned();
    c.send("evt_f", &event("failed", "m-f", None)).await;
    let (status, answer) = refund(&c, &debit, "r-f", "charged twice").await;
    assert_eq!(
        (status, answer["duplicate"].as_bool()),
        (200, Some(true)),
        "{answer}"
    );
    assert_eq!(answer["wallet"]["balance"], "1.00", "{answer}");
    assert!(
        answer["reason"].as_str().unwrap().contains("evt_f"),
        "the failure is why: {answer}"
    );
}
