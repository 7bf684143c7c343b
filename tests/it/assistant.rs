//! The assistant's tools are the product's tools: each write action through the route every
//! agent framework can call, once per (organisation, `call_id`), retried or not.

use crate::consequences::workers;
use crate::messages::{telegram_update, Setup};
use crate::support::api;
use crate::support::app::Crm;
use crate::support::queues::{self, event, receive};
use chrono::Utc;
use serde_json::{json, Value};
use std::time::Duration;

async fn tool(crm: &Crm, name: &str, call_id: &str, input: Value) -> (u16, Value) {
    let body = json!({"tool": name, "input": input, "call_id": call_id});
    crm.call("POST", "/api/assistant/calls", body).await
}

#[tokio::test]
async fn the_tools_are_listed_with_their_input_schemas() {
    let crm = Crm::new().await;
    let listed = crm.get("/api/assistant/tools").await;
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "reply",
            "create_task",
            "register_payment",
            "create_credit_note",
            "resolve_review",
            "find_invoices",
            "read_invoice",
            "list_conversations",
            "list_review"
        ]
    );
    let read_only: Vec<bool> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["annotations"]["readOnlyHint"] == true)
        .collect();
    assert_eq!(
        read_only,
        [false, false, false, false, false, true, true, true, true]
    );
    for t in listed["tools"].as_array().unwrap() {
        assert_eq!(t["input_schema"]["type"], "object", "{t}");
        // Listed alone, a schema must stand alone: no reference into a document it is not in.
        assert!(!t["input_schema"].to_string().contains("$ref"), "{t}");
        assert!(!t["description"].as_str().unwrap().is_empty());
    }
    let (status, unknown) = tool(&crm, "delete_everything", "c-0", json!({})).await;
    assert_eq!(
        (status, unknown["error"].as_str()),
        (400, Some("unknown_tool"))
    );
    assert!(
        unknown["detail"]
            .as_str()
            .unwrap()
            .contains("find_invoices"),
        "{unknown}"
    );
}

#[tokio::test]
async fn an_assistant_finds_the_ids_its_tools_need_with_the_read_tools_alone() {
    let crm = Crm::new().await;
    let inv = crm
        .invoice(json!({"currency": "UAH", "gross": "100.00", "contact_id": "ct_olena"}))
        .await;
    crm.invoice(json!({"currency": "UAH", "gross": "7.00"}))
        .await;
    let number = inv["number"].as_str().unwrap().to_lowercase();
    // "Olena paid 40 UAH of INV-00001": find it by its number, pay it, read it back.
    let made = crm
        .expect_status(
            "POST",
            "/api/keys",
            json!({"name": "reader", "scopes": ["read"]}),
            201,
        )
        .await;
    let reader = made["api_key"].as_str().unwrap().to_owned();
    let call =
        |tool: &str, id: &str, input: Value| json!({"tool": tool, "call_id": id, "input": input});
    let (status, found) = crm
        .call_as(
            &reader,
            "POST",
            "/api/assistant/calls",
            call("find_invoices", "r-1", json!({"number": number})),
        )
        .await;
    assert_eq!(status, 200, "{found}");
    let items = found["result"]["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{found}");
    assert_eq!(
        (&items[0]["id"], &items[0]["open"]),
        (&inv["id"], &json!("100.00"))
    );
    let (status, refused) = crm
        .call_as(
            &reader,
            "POST",
            "/api/assistant/calls",
            call(
                "register_payment",
                "r-2",
                json!({"invoice_id": inv["id"], "amount": "40.00"}),
            ),
        )
        .await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (403, Some("forbidden")),
        "a read key reads only"
    );
    let (status, _) = tool(
        &crm,
        "register_payment",
        "w-1",
        json!({"invoice_id": inv["id"], "amount": "40.00"}),
    )
    .await;
    assert_eq!(status, 200);
    let (_, read) = crm
        .call_as(
            &reader,
            "POST",
            "/api/assistant/calls",
            call("read_invoice", "r-3", json!({"invoice_id": inv["id"]})),
        )
        .await;
    assert_eq!(read["result"]["open"], "60.00", "{read}");
    assert_eq!(
        read["result"]["payments"].as_array().map(Vec::len),
        Some(1),
        "{read}"
    );
    let (_, by_contact) = crm
        .call_as(
            &reader,
            "POST",
            "/api/assistant/calls",
            call(
                "find_invoices",
                "r-4",
                json!({"contact_id": "ct_olena", "open": true}),
            ),
        )
        .await;
    assert_eq!(
        by_contact["result"]["items"].as_array().map(Vec::len),
        Some(1),
        "{by_contact}"
    );
    let (status, review) = crm
        .call_as(
            &reader,
            "POST",
            "/api/assistant/calls",
            call("list_review", "r-5", json!({})),
        )
        .await;
    assert_eq!(
        (status, review["result"]["items"].is_array()),
        (200, true),
        "{review}"
    );
    let (status, conversations) = crm
        .call_as(
            &reader,
            "POST",
            "/api/assistant/calls",
            call(
                "list_conversations",
                "r-6",
                json!({"contact_id": "ct_olena"}),
            ),
        )
        .await;
    assert_eq!(
        (
            status,
            conversations["result"]["items"].as_array().map(Vec::len)
        ),
        (200, Some(0))
    );
    let (status, bad) = crm
        .call_as(
            &reader,
            "POST",
            "/api/assistant/calls",
            call("read_invoice", "r-7", json!({"id": "x"})),
        )
        .await;
    assert_eq!(
        (status, bad["error"].as_str()),
        (400, Some("invalid_input")),
        "{bad}"
    );
    // A writing tool's input refused before it was a call of the tool keeps nothing: the same
    // call_id corrected is performed.
    let extra = json!({"title": "Call back", "extra": 1});
    let (status, bad) = tool(&crm, "create_task", "toolu_fix", extra).await;
    assert_eq!(
        (status, bad["error"].as_str()),
        (400, Some("invalid_input")),
        "{bad}"
    );
    let fixed = json!({"title": "Call back"});
    let (status, made) = tool(&crm, "create_task", "toolu_fix", fixed).await;
    assert_eq!(
        (
            status,
            made["duplicate"].as_bool(),
            made["result"]["created"].as_bool()
        ),
        (200, Some(false), Some(true)),
        "{made}"
    );
}

#[tokio::test]
async fn a_retried_tool_call_acts_once_and_gets_the_stored_result() {
    let crm = Crm::new().await;
    let inv = crm
        .invoice(json!({"currency": "UAH", "gross": "100.00"}))
        .await;
    let id = inv["id"].as_str().unwrap();
    // An agent framework that retries a tool call, five copies at once.
    let pay = json!({"invoice_id": id, "amount": "40.00"});
    let copies = (0..5).map(|_| tool(&crm, "register_payment", "toolu_pay", pay.clone()));
    let answers = futures::future::join_all(copies).await;
    // One performs it; every copy gets its result, stored with it (a copy that wrote at the
    // same time finds the record its twin put, and answers with it).
    let fresh: Vec<_> = answers
        .iter()
        .filter(|(s, a)| *s == 200 && a["duplicate"] == false)
        .collect();
    assert_eq!(fresh.len(), 1, "{answers:?}");
    assert_eq!(fresh[0].1["result"]["applied"], "40.00");
    let first = fresh[0].1["result"].clone();
    assert!(
        answers
            .iter()
            .all(|(s, a)| *s == 200 && a["result"] == first),
        "{answers:?}"
    );
    let (status, retried) = tool(&crm, "register_payment", "toolu_pay", pay).await;
    assert_eq!((status, retried["duplicate"].as_bool()), (200, Some(true)));
    assert_eq!(retried["result"], first, "the stored result");
    let stored = crm.get(&format!("/api/invoices/{id}")).await;
    assert_eq!(
        (
            stored["paid"].as_str(),
            stored["payments"].as_array().unwrap().len()
        ),
        (Some("40.00"), 1)
    );
    assert_eq!(stored["payments"][0]["source"], "assistant");
    let (status, reused) = tool(
        &crm,
        "register_payment",
        "toolu_pay",
        json!({"invoice_id": id, "amount": "50.00"}),
    )
    .await;
    assert_eq!(
        (status, reused["error"].as_str()),
        (409, Some("idempotency_key_reused"))
    );

    a_credit_note_and_a_task_each_once(&crm, id).await;
    a_review_item_is_resolved_through_the_tool(&crm, id).await;
}

#[tokio::test]
async fn a_call_whose_payment_was_booked_before_under_its_id_is_told_a_duplicate() {
    let crm = Crm::new().await;
    let inv = crm
        .invoice(json!({"currency": "UAH", "gross": "100.00"}))
        .await;
    let id = inv["id"].as_str().unwrap();
    // Booked first through the route, as the assistant, under the id the call names: the
    // call's own record is not there (as after its 7 days), its payment is.
    let body = json!({"source": "assistant", "amount": "40.00"});
    let path = format!("/api/invoices/{id}/payments");
    let (status, booked) = crm
        .call_with("POST", &path, &[("idempotency-key", "toolu_c1")], body)
        .await;
    assert_eq!(status, 200, "{booked}");
    let pay = json!({"invoice_id": id, "amount": "40.00"});
    let (status, again) = tool(&crm, "register_payment", "toolu_c1", pay).await;
    assert_eq!(
        (status, again["duplicate"].as_bool()),
        (200, Some(true)),
        "nothing was done again, and the call says so: {again}"
    );
    let stored = crm.get(&format!("/api/invoices/{id}")).await;
    assert_eq!(stored["paid"], "40.00");
}

/// A credit note and a task, each twice under one `call_id`: once each.
async fn a_credit_note_and_a_task_each_once(crm: &Crm, id: &str) {
    // A credit note and a task, each once.
    for expected in [false, true] {
        let (status, note) = tool(
            crm,
            "create_credit_note",
            "toolu_cn",
            json!({"invoice_id": id, "amount": "10.00", "reason": "goodwill"}),
        )
        .await;
        assert_eq!(
            (status, note["duplicate"].as_bool()),
            (200, Some(expected)),
            "{note}"
        );
        assert_eq!(note["result"]["number"], "CN-00001");
        let (status, task) = tool(
            crm,
            "create_task",
            "toolu_task",
            json!({"title": "Call Olena back"}),
        )
        .await;
        assert_eq!(
            (
                status,
                task["duplicate"].as_bool(),
                task["result"]["created"].as_bool()
            ),
            (200, Some(expected), Some(true)),
            "{task}"
        );
    }
    let tasks = firmspace::effects::automation::tasks(crm.store(), &crm.org)
        .await
        .unwrap();
    assert_eq!(tasks.len(), 1);
}

/// Overpaid by the assistant: the review item it raised is resolved through the tool.
async fn a_review_item_is_resolved_through_the_tool(crm: &Crm, id: &str) {
    // Overpaid by the assistant: the review item it raised is resolved through the tool.
    let (_, over) = tool(
        crm,
        "register_payment",
        "toolu_over",
        json!({"invoice_id": id, "amount": "70.00"}),
    )
    .await;
    assert_eq!(over["result"]["outcome"], "overpaid", "{over}");
    let key = over["result"]["event_key"].as_str().unwrap();
    let resolve = json!({"reason": "overpayment", "key": key, "note": "refunded 20.00 by hand"});
    let (status, resolved) = tool(crm, "resolve_review", "toolu_resolve", resolve).await;
    assert_eq!(
        (status, resolved["result"]["state"].as_str()),
        (200, Some("resolved")),
        "{resolved}"
    );
    let review = crm.review().await;
    assert!(
        review.iter().all(|r| r["state"] == "resolved"),
        "{review:?}"
    );
    let (status, _) = tool(
        crm,
        "resolve_review",
        "toolu_none",
        json!({"reason": "overpayment", "key": "payment:nope", "note": "x"}),
    )
    .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_reply_tool_call_is_sent_once_through_the_channel_however_often_it_comes() {
    let s = Setup::new(Setup::telegram).await;
    let (status, first) = s
        .answer(s.telegram_request(&telegram_update(21, "hello?", None)))
        .await;
    assert_eq!(status, 200, "{first}");
    let conversation = first["conversation_id"].as_str().unwrap().to_owned();
    let sqs = queues::client().await;
    let q = queues::three_queues(&sqs).await;
    let app = ::api::App::new(s.env.store.clone(), api::settings());
    let body = json!({"tool": "reply", "call_id": "toolu_reply",
        "input": {"conversation_id": conversation, "text": "We deliver on Fridays"}});
    for expected in [false, true] {
        let (status, answer) =
            api::call(&app, "POST", "/api/assistant/calls", &s.key, body.clone()).await;
        assert_eq!(
            (status, answer["duplicate"].as_bool()),
            (200, Some(expected)),
            "{answer}"
        );
        assert_eq!(answer["result"]["state"], "sending");
    }
    // The reply was stored with the call, once; the stream hands it to the fan-out (twice: a
    // retried batch), which queues it for the automation worker.
    let stored = s.env.items_of(firmspace::effects::ASSISTED_KIND).await;
    assert_eq!(stored.len(), 1, "the repeat stored nothing");
    let fanout = fanout::App::new(
        firmspace::effects::queue::Publisher {
            sqs: sqs.clone(),
            queues: q.clone(),
        },
        s.env.store.clone(),
    );
    for seq in ["1", "2"] {
        let out = fanout
            .process(
                crate::consequences::stream_event(&stored[0], seq),
                Utc::now(),
            )
            .await;
        assert!(out.batch_item_failures.is_empty(), "{out:?}");
    }
    let queued = receive(&sqs, &q.automation, 1).await;
    assert!(!queued.is_empty(), "queued for the worker");
    // The worker gets the message three times (a redelivery, a timeout): one send.
    let w = workers(&s.env, Duration::from_secs(2), 5);
    for _ in 0..3 {
        let out = w.automation.process(event(&queued), Utc::now()).await;
        assert!(out.batch_item_failures.is_empty(), "{out:?}");
    }
    assert_eq!(s.stand_in.sends(), 1);
    assert_eq!(
        s.stand_in.sent()[0],
        json!({"chat_id": "42", "text": "We deliver on Fridays"})
    );
}

/// A tool call refused is answered so again: its refusal is the call's answer, kept under its
/// `call_id` (a payment, a credit note or a task writes the call's record with its effect, and a
/// refusal writes the record alone). The call id sent again with another input is another call.
#[tokio::test]
async fn a_refused_tool_call_is_refused_again_and_its_id_is_not_reused_for_another_input() {
    let crm = Crm::new().await;
    let invoice = crm
        .invoice(json!({"currency": "UAH", "gross": "100.00"}))
        .await;
    let id = invoice["id"].as_str().unwrap();
    let too_much = json!({"invoice_id": id, "amount": "500.00", "reason": "goodwill"});
    let (status, refused) = tool(&crm, "create_credit_note", "toolu_over", too_much.clone()).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (409, Some("credit_exceeds_invoice")),
        "{refused}"
    );
    let (status, again) = tool(&crm, "create_credit_note", "toolu_over", too_much).await;
    assert_eq!((status, &again), (409, &refused), "the kept refusal");
    let fits = json!({"invoice_id": id, "amount": "50.00", "reason": "goodwill"});
    let (status, reused) = tool(&crm, "create_credit_note", "toolu_over", fits).await;
    assert_eq!(
        (status, reused["error"].as_str()),
        (409, Some("idempotency_key_reused")),
        "{reused}"
    );
    assert_eq!(crm.count("credit_note").await, 0);
}
