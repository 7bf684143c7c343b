//! Documents made on purpose: a credit note is numbered from its own series, credits the unpaid
//! part before the paid one (a refund due for a person), never more than the invoice's gross, and
//! is issued once per `Idempotency-Key`; a draft is voided and then takes no payment.

use crate::consequences::{fanout_app, stream_event, workers};
use crate::support::app::Crm;
use crate::support::queues::receive;
use chrono::Utc;
use firmspace::effects::automation::{self, Action};
use firmspace::effects::Trigger;
use serde_json::{json, Value};
use std::time::Duration;

/// An open invoice of 100.00 UAH owned by the member u1 and linked to a contact: its id.
async fn hundred(crm: &Crm) -> String {
    let member = json!({"user_id": "u1", "name": "Olena"});
    crm.expect_status("POST", "/api/members", member, 201).await;
    let inv = crm
        .invoice(json!({"currency": "UAH", "gross": "100.00", "owner": "u1", "contact_id": "ct_1"}))
        .await;
    inv["id"].as_str().unwrap().to_owned()
}

async fn credit(crm: &Crm, invoice: &str, key: &str, body: Value) -> (u16, Value) {
    let path = format!("/api/invoices/{invoice}/credit-notes");
    crm.call_with("POST", &path, &[("idempotency-key", key)], body)
        .await
}

#[tokio::test]
async fn a_credit_lowers_what_is_open_then_becomes_a_refund_due_and_never_exceeds_the_gross() {
    let crm = Crm::new().await;
    let id = hundred(&crm).await;
    let returned = json!({"amount": "30.00", "reason": "returned goods"});
    let (status, first) = credit(&crm, &id, "cn-1", returned.clone()).await;
    assert_eq!(status, 201, "{first}");
    assert_eq!(
        (
            first["number"].as_str(),
            first["amount"].as_str(),
            first["refund_due"].as_str()
        ),
        (Some("CN-00001"), Some("30.00"), Some("0.00"))
    );
    assert_eq!(
        (
            first["invoice"]["open"].as_str(),
            first["invoice"]["credited"].as_str()
        ),
        (Some("70.00"), Some("30.00"))
    );
    // The same request again: the stored note; the same key with another body: refused.
    let (status, again) = credit(&crm, &id, "cn-1", returned).await;
    assert_eq!((status, again["duplicate"].as_bool()), (200, Some(true)));
    assert_eq!(again["credit_note_id"], first["credit_note_id"]);
    let (status, other) =
        credit(&crm, &id, "cn-1", json!({"amount": "31.00", "reason": "x"})).await;
    assert_eq!(
        (status, other["error"].as_str()),
        (409, Some("idempotency_key_reused"))
    );

    // Paid in full (70.00 open), then 20.00 credited on the paid part: a refund for a person.
    let (status, _) = crm.pay(&id, "pay-1", json!({"source": "manual"})).await;
    assert_eq!(status, 200);
    let lines = json!({"reason": "discount", "lines": [
        {"description": "late delivery", "amount": "15.00"},
        {"description": "scratch", "amount": "5.00"}]});
    let (status, refund) = credit(&crm, &id, "cn-2", lines).await;
    assert_eq!(status, 201, "{refund}");
    assert_eq!(
        (
            refund["number"].as_str(),
            refund["amount"].as_str(),
            refund["refund_due"].as_str()
        ),
        (Some("CN-00002"), Some("20.00"), Some("20.00"))
    );
    assert_eq!(refund["invoice"]["status"], "paid", "it stays paid");
    let review = crm.review().await;
    let due: Vec<_> = review
        .iter()
        .filter(|r| r["reason"] == "refund_due")
        .collect();
    assert_eq!(due.len(), 1, "{review:?}");
    assert_eq!(due[0]["detail"]["refund_due"], "20.00");

    // 50.00 is left to credit: ten notes of 10.00 at once, five are issued, numbered without a gap.
    let tries = (0..10).map(|i| {
        let key = format!("cn-c{i}");
        let crm = &crm;
        let id = &id;
        async move {
            credit(
                crm,
                id,
                &key,
                json!({"amount": "10.00", "reason": "goodwill"}),
            )
            .await
        }
    });
    let answers = futures::future::join_all(tries).await;
    let mut numbers: Vec<&str> = answers
        .iter()
        .filter(|(s, _)| *s == 201)
        .map(|(_, a)| a["number"].as_str().unwrap())
        .collect();
    numbers.sort();
    assert_eq!(
        numbers,
        ["CN-00003", "CN-00004", "CN-00005", "CN-00006", "CN-00007"]
    );
    assert!(
        answers
            .iter()
            .filter(|(s, _)| *s != 201)
            .all(|(s, a)| *s == 409 && a["error"] == "credit_exceeds_invoice"),
        "{answers:?}"
    );
    let invoice = crm.get(&format!("/api/invoices/{id}")).await;
    assert_eq!(
        (
            invoice["credited"].as_str(),
            invoice["paid"].as_str(),
            invoice["status"].as_str()
        ),
        (Some("100.00"), Some("70.00"), Some("paid"))
    );
    assert_eq!(invoice["credit_notes"].as_array().unwrap().len(), 7);
    let (status, over) = credit(&crm, &id, "cn-over", json!({"reason": "all of it"})).await;
    assert_eq!(
        (status, over["error"].as_str()),
        (409, Some("credit_exceeds_invoice"))
    );
    assert_eq!(crm.count("credit_note").await, 7);
}

#[tokio::test]
async fn a_void_draft_takes_no_payment_and_an_issued_invoice_is_not_voided() {
    let crm = Crm::new().await;
    let draft = crm
        .invoice(json!({"currency": "UAH", "gross": "40.00", "status": "draft"}))
        .await;
    let id = draft["id"].as_str().unwrap();
    let path = format!("/api/invoices/{id}/void");
    let (status, void) = crm.call("POST", &path, Value::Null).await;
    assert_eq!(
        (status, void["status"].as_str(), void["duplicate"].as_bool()),
        (200, Some("void"), Some(false))
    );
    let (status, again) = crm.call("POST", &path, Value::Null).await;
    assert_eq!(
        (
            status,
            again["duplicate"].as_bool(),
            again["version"].clone()
        ),
        (200, Some(true), void["version"].clone())
    );
    // A payment for it is kept, applied 0, for a person.
    let (status, paid) = crm
        .pay(
            id,
            "pay-void",
            json!({"source": "manual", "amount": "40.00"}),
        )
        .await;
    assert_eq!(
        (status, paid["outcome"].as_str(), paid["applied"].as_str()),
        (200, Some("invoice_void"), Some("0.00"))
    );
    assert_eq!(crm.reasons().await, ["invoice_void"]);
    let (status, refused) = credit(&crm, id, "cn-void", json!({"reason": "x"})).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (409, Some("not_issued"))
    );
    let open = crm
        .invoice(json!({"currency": "UAH", "gross": "40.00"}))
        .await;
    let path = format!("/api/invoices/{}/void", open["id"].as_str().unwrap());
    let (status, not_draft) = crm.call("POST", &path, Value::Null).await;
    assert_eq!(
        (status, not_draft["error"].as_str()),
        (409, Some("not_draft"))
    );
}

#[tokio::test]
async fn a_credit_notes_consequences_happen_once() {
    let crm = Crm::new().await;
    let id = hundred(&crm).await;
    let task = Action::CreateTask {
        title: "Refund the customer".into(),
    };
    automation::create_rule(
        crm.store(),
        &crm.org,
        Trigger::CreditNoteCreated,
        task,
        Utc::now(),
    )
    .await
    .unwrap();
    let (status, _) = credit(
        &crm,
        &id,
        "cn-1",
        json!({"amount": "10.00", "reason": "goodwill"}),
    )
    .await;
    assert_eq!(status, 201);
    let note = crm.env.items_of("credit_note").await.remove(0);
    let (sqs, q, fanout) = fanout_app(&crm.env).await;
    for seq in ["1", "2"] {
        let out = fanout.process(stream_event(&note, seq), Utc::now()).await;
        assert!(out.batch_item_failures.is_empty());
    }
    let (notes, triggers) = (
        receive(&sqs, &q.notifications, 1).await,
        receive(&sqs, &q.automation, 1).await,
    );
    let w = workers(&crm.env, Duration::from_secs(2), 5);
    w.notify_all(&notes).await;
    w.automation_all(&triggers).await;
    let inbox = crm.get("/api/notifications?recipient=u1").await;
    assert_eq!(
        inbox["items"].as_array().unwrap().len(),
        1,
        "the owner, once: {inbox}"
    );
    // A recipient that is no member's id (as the document's pattern says) names no one: 400.
    let (status, refused) = crm
        .call("GET", "/api/notifications?recipient=u%C3%A9", Value::Null)
        .await;
    assert_eq!(
        (status, refused["field"].as_str()),
        (400, Some("recipient")),
        "{refused}"
    );
    let log = crm.get("/api/activity/contact/ct_1").await;
    assert_eq!(log["items"].as_array().unwrap().len(), 1, "{log}");
    assert_eq!(
        automation::tasks(crm.store(), &crm.org)
            .await
            .unwrap()
            .len(),
        1
    );
}

/// A payment (or, with `reverses`, a reversal of one) of `amount` UAH on `invoice`, booked.
async fn booked(crm: &Crm, invoice: &str, key: &str, amount: &str, reverses: Option<&str>) {
    use firmspace::ids::ExternalId;
    let input = firmspace::payments::PaymentInput {
        org: crm.org.clone(),
        invoice_ref: Some(invoice.to_owned()),
        source: firmspace::payments::Source::Manual,
        external_id: ExternalId::parse("id", key).unwrap(),
        amount: Some(amount.parse().unwrap()),
        currency: Some(firmspace::money::Currency::parse("UAH").unwrap()),
        at: Utc::now(),
        actor: "test".into(),
        reverses: reverses.map(|r| ExternalId::parse("id", r).unwrap()),
        reversible: false,
        via: None,
    };
    firmspace::payments::register_payment(crm.store(), &input)
        .await
        .unwrap();
}

/// The organisation's `refund_due` item: its state, its `refund_due`, who resolved it and why.
async fn refund_item(crm: &Crm) -> (String, Value, Value, Value) {
    let items = crm.review().await;
    let item = items
        .iter()
        .find(|i| i["reason"] == "refund_due")
        .expect("a refund_due item");
    (
        item["state"].as_str().unwrap().to_owned(),
        item["detail"]["refund_due"].clone(),
        item["resolved_by"].clone(),
        item["note"].clone(),
    )
}

#[tokio::test]
async fn a_chargeback_that_gives_the_money_back_settles_the_refund_a_person_would_make() {
    let crm = Crm::new().await;
    let id = hundred(&crm).await;
    booked(&crm, &id, "p1", "20.00", None).await;
    booked(&crm, &id, "p2", "80.00", None).await;
    // Paid in full, then credited 50.00: 50.00 to give back, for a person.
    let returned = json!({"amount": "50.00", "reason": "returned goods"});
    let (status, note) = credit(&crm, &id, "cn-back", returned).await;
    assert_eq!(
        (status, note["refund_due"].as_str()),
        (201, Some("50.00")),
        "{note}"
    );
    assert_eq!(refund_item(&crm).await.1, "50.00");

    // The bank takes 20.00 back: the refund asks for 30.00 now.
    booked(&crm, &id, "p1-back", "20.00", Some("p1")).await;
    let (state, due, _, _) = refund_item(&crm).await;
    assert_eq!((state.as_str(), due), ("open", json!("30.00")));

    // And the other 80.00: more than the refund, which is settled by the system.
    booked(&crm, &id, "p2-back", "80.00", Some("p2")).await;
    let (state, _, by, why) = refund_item(&crm).await;
    assert_eq!(
        (state.as_str(), by, why),
        ("resolved", json!("system"), json!("reversed"))
    );
    let open = firmspace::review::open_by_reason(crm.store(), &crm.org)
        .await
        .unwrap();
    assert_eq!(open.get("refund_due"), None, "{open:?}");
}
