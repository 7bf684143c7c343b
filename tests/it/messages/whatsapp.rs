//! WhatsApp Cloud: the subscription handshake, a signed batch of messages answered message by
//! message, media through the Graph API, and statuses that only move forward.

use super::{Setup, VERIFY_TOKEN};
use crate::support::request;
use chrono::Utc;
use firmspace::messages::{self, Conversation};
use firmspace::store::item::Read;
use serde_json::json;

fn delivery(value: serde_json::Value) -> String {
    json!({"object": "whatsapp_business_account", "entry": [{"id": "WABA1", "changes": [{"field": "messages", "value": value}]}]}).to_string()
}

fn inbound(ids: &[&str]) -> String {
    let messages: Vec<_> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let at = (Utc::now().timestamp() - 60 + i as i64).to_string();
            if i == 0 {
                json!({"from": "380501234567", "id": id, "timestamp": at, "type": "text", "text": {"body": "hello"}})
            } else {
                json!({"from": "380501234567", "id": id, "timestamp": at, "type": "image", "image": {"id": format!("MEDIA-{id}"), "mime_type": "image/jpeg", "caption": "photo"}})
            }
        })
        .collect();
    delivery(json!({"messaging_product": "whatsapp",
        "metadata": {"display_phone_number": "15550001111", "phone_number_id": "PN1"},
        "contacts": [{"profile": {"name": "Taras"}, "wa_id": "380501234567"}],
        "messages": messages}))
}

#[tokio::test]
async fn the_handshake_answers_the_challenge_only_to_the_verify_token() {
    let s = Setup::new(Setup::whatsapp).await;
    let get = |token: &str| {
        request(
            "GET",
            &format!(
                "{}?hub.mode=subscribe&hub.verify_token={token}&hub.challenge=1158201444",
                s.path()
            ),
            &[],
            Vec::new(),
        )
    };
    let res = s.app.respond(&get(VERIFY_TOKEN), Utc::now()).await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "text/plain");
    assert_eq!(crate::support::body_text(&res), "1158201444");
    assert_eq!(s.answer(get("guess")).await.0, 403);
    assert!(s
        .env
        .items()
        .await
        .iter()
        .all(|i| i.opt_str("kind") != Some("message")));
}

#[tokio::test]
async fn a_batch_is_answered_message_by_message_and_a_repeat_stores_nothing() {
    let s = Setup::new(Setup::whatsapp).await;
    let body = inbound(&["wamid.A", "wamid.B"]);
    let (status, first) = s.answer(s.whatsapp_request(&body)).await;
    assert_eq!(status, 200, "{first}");
    let listed = first["messages"].as_array().unwrap();
    assert_eq!(listed.len(), 2);
    assert!(listed.iter().all(|m| m["duplicate"] == false));
    assert_eq!(listed[0]["conversation_id"], listed[1]["conversation_id"]);
    assert_eq!(s.objects().await, 1, "the image went to S3 once");

    let (status, again) = s.answer(s.whatsapp_request(&body)).await;
    assert_eq!(status, 200);
    assert!(again["messages"]
        .as_array()
        .unwrap()
        .iter()
        .all(|m| m["duplicate"] == true));
    assert_eq!(
        (
            s.env.count("message").await,
            s.env.count("conversation").await
        ),
        (2, 1)
    );
    assert_eq!(s.stand_in.downloads(), 1);
    // wa_id is a phone number: the lead has it, so a call from it finds the same contact.
    let contact = &s.items_of("contact").await[0];
    assert_eq!(contact["name"].as_s().unwrap(), "Taras");
    assert_eq!(
        contact["phones"].as_ss().unwrap(),
        &["+380501234567".to_owned()]
    );

    // Unsigned or signed with another secret: refused before anything is read.
    let forged = request(
        "POST",
        &s.path(),
        &[("x-hub-signature-256", "sha256=00")],
        body.clone(),
    );
    assert_eq!(s.answer(forged).await.0, 401);
}

#[tokio::test]
async fn statuses_out_of_order_end_read_and_each_is_applied_once() {
    let s = Setup::new(Setup::whatsapp).await;
    s.answer(s.whatsapp_request(&inbound(&["wamid.IN"]))).await;
    let conv_item = s.items_of("conversation").await.remove(0);
    let conversation = Conversation::from_item(&conv_item).unwrap();
    let reply = messages::outgoing(&conversation, "wamid.OUT", "thanks", None, Utc::now());
    assert!(messages::record_outgoing(&s.env.store, &reply)
        .await
        .unwrap());
    let status = |name: &str, at: i64| json!({"id": "wamid.OUT", "status": name, "timestamp": at.to_string(), "recipient_id": "380501234567"});
    let t = Utc::now().timestamp();
    let statuses = |list: Vec<serde_json::Value>| {
        delivery(
            json!({"messaging_product": "whatsapp", "metadata": {"phone_number_id": "PN1"}, "statuses": list}),
        )
    };
    // read arrives first, then delivered, then sent, then read again.
    let (code, answer) = s
        .answer(s.whatsapp_request(&statuses(vec![status("read", t + 2)])))
        .await;
    assert_eq!(
        (
            code,
            answer["statuses"].as_u64(),
            answer["statuses_applied"].as_u64()
        ),
        (200, Some(1), Some(1))
    );
    let late = statuses(vec![
        status("delivered", t + 1),
        status("sent", t),
        status("read", t + 2),
    ]);
    let (code, answer) = s.answer(s.whatsapp_request(&late)).await;
    assert_eq!((code, answer["statuses_applied"].as_u64()), (200, Some(0)));
    let out = s
        .items_of("message")
        .await
        .into_iter()
        .find(|m| m.opt_str("provider_id") == Some("wamid.OUT"))
        .unwrap();
    assert_eq!(out.opt_str("status"), Some("read"));
    // A status for a message that is not ours changes nothing and creates nothing.
    let stray = statuses(vec![
        json!({"id": "wamid.IN", "status": "read", "timestamp": t.to_string()}),
    ]);
    assert_eq!(
        s.answer(s.whatsapp_request(&stray)).await.1["statuses_applied"],
        0
    );
    assert_eq!(s.env.count("message").await, 2);
}

#[tokio::test]
async fn a_status_before_its_reply_is_stored_is_kept_and_the_reply_starts_from_it() {
    let s = Setup::new(Setup::whatsapp).await;
    s.answer(s.whatsapp_request(&inbound(&["wamid.IN2"]))).await;
    let conversation =
        Conversation::from_item(&s.items_of("conversation").await.remove(0)).unwrap();
    let t = Utc::now().timestamp();
    let status = |name: &str| {
        delivery(
            json!({"messaging_product": "whatsapp", "metadata": {"phone_number_id": "PN1"},
            "statuses": [{"id": "wamid.FAST", "status": name, "timestamp": t.to_string()}]}),
        )
    };
    // `delivered` outruns the worker that stores the reply; a later `sent` keeps it.
    for name in ["delivered", "sent"] {
        let (code, answer) = s.answer(s.whatsapp_request(&status(name))).await;
        assert_eq!((code, answer["statuses_applied"].as_u64()), (200, Some(0)));
    }
    let early = messages::early_status(&s.env.store, &conversation, "wamid.FAST")
        .await
        .unwrap();
    assert_eq!(early, Some(firmspace::messages::OutStatus::Delivered));
    let reply = messages::outgoing(&conversation, "wamid.FAST", "ok", early, Utc::now());
    assert!(messages::record_outgoing(&s.env.store, &reply)
        .await
        .unwrap());
    let (_, answer) = s.answer(s.whatsapp_request(&status("read"))).await;
    assert_eq!(answer["statuses_applied"], 1);
    let stored = s
        .items_of("message")
        .await
        .into_iter()
        .find(|m| m.opt_str("provider_id") == Some("wamid.FAST"))
        .unwrap();
    assert_eq!(stored.opt_str("status"), Some("read"));
}

#[tokio::test]
async fn a_status_that_comes_while_its_reply_is_stored_is_not_lost() {
    let s = Setup::new(Setup::whatsapp).await;
    s.answer(s.whatsapp_request(&inbound(&["wamid.IN3"]))).await;
    let conversation =
        Conversation::from_item(&s.items_of("conversation").await.remove(0)).unwrap();
    // The worker reads no early status; `failed` (outside the 24-hour window) comes before the
    // reply is stored, and waits on its own item.
    let early = messages::early_status(&s.env.store, &conversation, "wamid.RACE")
        .await
        .unwrap();
    assert_eq!(early, None);
    let t = Utc::now().timestamp();
    let failed = delivery(
        json!({"messaging_product": "whatsapp", "metadata": {"phone_number_id": "PN1"},
        "statuses": [{"id": "wamid.RACE", "status": "failed", "timestamp": t.to_string()}]}),
    );
    s.answer(s.whatsapp_request(&failed)).await;
    let reply = messages::outgoing(&conversation, "wamid.RACE", "ok", early, Utc::now());
    assert!(messages::record_outgoing(&s.env.store, &reply)
        .await
        .unwrap());
    assert!(
        messages::caught_up(&s.env.store, &conversation, "wamid.RACE", Utc::now())
            .await
            .unwrap()
    );
    let stored = s
        .items_of("message")
        .await
        .into_iter()
        .find(|m| m.opt_str("provider_id") == Some("wamid.RACE"))
        .unwrap();
    assert_eq!(stored.opt_str("status"), Some("failed"));
}

#[tokio::test]
async fn one_message_beyond_a_limit_is_kept_for_review_and_the_others_of_its_batch_are_stored() {
    let s = Setup::new(Setup::whatsapp).await;
    let body = delivery(
        json!({"messaging_product": "whatsapp", "metadata": {"phone_number_id": "PN1"},
        "messages": [
            {"from": "380501234567", "id": "wamid.OK", "timestamp": "1764763200", "type": "text", "text": {"body": "fine"}},
            {"from": "380 50", "id": "wamid.BAD", "timestamp": "1764763201", "type": "text", "text": {"body": "a space in wa_id"}}]}),
    );
    let (status, answer) = s.answer(s.whatsapp_request(&body)).await;
    assert_eq!(status, 200, "{answer}");
    let listed = answer["messages"].as_array().unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0]["duplicate"], false);
    assert_eq!(listed[1]["status"], "unparseable");
    assert_eq!(s.env.count("message").await, 1);
    let reasons = s.review_reasons().await;
    assert_eq!(reasons, ["unparseable_message"]);
    let detail = s.items_of("review").await[0]["detail"]
        .as_s()
        .unwrap()
        .clone();
    let detail: serde_json::Value = serde_json::from_str(&detail).unwrap();
    let raw: serde_json::Value = serde_json::from_str(detail["raw"].as_str().unwrap()).unwrap();
    assert_eq!(
        (raw["id"].as_str(), raw["from"].as_str()),
        (Some("wamid.BAD"), Some("380 50")),
        "its JSON as posted"
    );
    // The same delivery again: nothing new, the review item is not doubled.
    s.answer(s.whatsapp_request(&body)).await;
    assert_eq!(
        (s.env.count("message").await, s.env.count("review").await),
        (1, 1)
    );
}

#[tokio::test]
async fn messages_of_a_batch_that_cannot_be_read_are_set_aside_and_the_others_stored() {
    let s = Setup::new(Setup::whatsapp).await;
    let body = delivery(
        json!({"messaging_product": "whatsapp", "metadata": {"phone_number_id": "PN1"},
        "messages": [
            {"from": "380501234567", "id": "wamid.GOOD", "timestamp": "1764763200", "type": "text", "text": {"body": "fine"}},
            {"id": "wamid.NOFROM", "timestamp": "1764763201", "type": "text", "text": {"body": "who?"}},
            {"from": "380501234567", "timestamp": "1764763202", "type": "image", "image": {"caption": "no media id"}}]}),
    );
    let (status, answer) = s.answer(s.whatsapp_request(&body)).await;
    assert_eq!(status, 200, "{answer}");
    let listed = answer["messages"].as_array().unwrap();
    let set_aside: Vec<&str> = listed.iter().filter_map(|m| m["status"].as_str()).collect();
    assert_eq!(
        (listed.len(), set_aside),
        (3, vec!["unparseable", "unparseable"]),
        "{answer}"
    );
    assert_eq!(s.env.count("message").await, 1, "the readable one stored");
    assert_eq!(
        s.review_reasons().await,
        ["unparseable_message", "unparseable_message"],
        "one item each, though one names no id"
    );
    // Again: nothing new, no item doubled.
    s.answer(s.whatsapp_request(&body)).await;
    assert_eq!(
        (s.env.count("message").await, s.env.count("review").await),
        (1, 2)
    );
}

#[tokio::test]
async fn a_tapped_button_and_a_shared_place_are_stored_and_an_unknown_type_is_set_aside() {
    let s = Setup::new(Setup::whatsapp).await;
    let body = delivery(
        json!({"messaging_product": "whatsapp", "metadata": {"phone_number_id": "PN1"},
        "messages": [
            {"from": "380501234567", "id": "wamid.BTN", "timestamp": "1764763200", "type": "button", "button": {"text": "Yes, call me", "payload": "yes"}},
            {"from": "380501234567", "id": "wamid.LOC", "timestamp": "1764763201", "type": "location", "location": {"latitude": 50.45, "longitude": 30.52}},
            {"from": "380501234567", "id": "wamid.UNS", "timestamp": "1764763202", "type": "unsupported", "errors": [{"code": 131051}]}]}),
    );
    let (status, answer) = s.answer(s.whatsapp_request(&body)).await;
    assert_eq!(status, 200, "{answer}");
    let mut texts: Vec<String> = s
        .env
        .items_of("message")
        .await
        .iter()
        .filter_map(|m| m.opt_str("text").map(str::to_owned))
        .collect();
    texts.sort();
    assert_eq!(texts, ["Location: 50.45, 30.52", "Yes, call me"]);
    assert_eq!(s.review_reasons().await, ["unparseable_message"]);
}

#[tokio::test]
async fn a_reply_leaves_from_the_business_number_the_customer_wrote_to_last() {
    let s = Setup::new(Setup::whatsapp).await;
    let to = |number: &str, id: &str, ago: i64| {
        let at = (Utc::now().timestamp() - ago).to_string();
        delivery(
            json!({"messaging_product": "whatsapp", "metadata": {"phone_number_id": number},
            "messages": [{"from": "380501234567", "id": id, "timestamp": at, "type": "text", "text": {"body": id}}]}),
        )
    };
    s.answer(s.whatsapp_request(&to("PN1", "wamid.1", 60)))
        .await;
    s.answer(s.whatsapp_request(&to("PN2", "wamid.2", 30)))
        .await;
    // The fan-out reads the second message and moves its conversation forward.
    let (_, _, fanout) = crate::consequences::fanout_app(&s.env).await;
    let items = s.env.items_of("message").await;
    let second = items
        .iter()
        .find(|m| m.opt_str("text") == Some("wamid.2"))
        .unwrap();
    let out = fanout
        .process(crate::consequences::stream_event(second, "1"), Utc::now())
        .await;
    assert!(out.batch_item_failures.is_empty());
    let conversations = messages::conversations(&s.env.store, &s.org).await.unwrap();
    assert_eq!(conversations.len(), 1);
    assert_eq!(conversations[0].reply_via.as_deref(), Some("PN2"));
}

#[tokio::test]
async fn a_cosmetic_field_over_its_limit_is_cut_with_a_note_and_the_message_kept() {
    let s = Setup::new(Setup::whatsapp).await;
    let long_name = "Ю".repeat(300);
    let month_ago = (chrono::Utc::now() - chrono::Duration::days(30))
        .timestamp()
        .to_string();
    let body = delivery(
        json!({"messaging_product": "whatsapp", "metadata": {"phone_number_id": "PN1"},
        "contacts": [{"wa_id": "380501234567", "profile": {"name": long_name}}],
        "messages": [{"from": "380501234567", "id": "wamid.LONG", "timestamp": month_ago, "type": "text", "text": {"body": "hi"}}],
        "statuses": [{"id": format!("wamid.{}", "x".repeat(300)), "status": "read", "timestamp": month_ago}]}),
    );
    let (status, answer) = s.answer(s.whatsapp_request(&body)).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["messages"][0]["duplicate"], false, "{answer}");
    assert_eq!(
        answer["statuses_applied"], 0,
        "a status id over the key limits is no message of ours"
    );
    let stored = s.items_of("message").await.remove(0);
    assert_eq!(stored["sender_name"].as_s().unwrap().chars().count(), 200);
    let notes: Vec<String> = serde_json::from_str(stored["notes"].as_s().unwrap()).unwrap();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(
        notes[0].starts_with("from.name: cut to 200 of its 300"),
        "{notes:?}"
    );
    assert!(notes[1].starts_with("sent_at:"), "{notes:?}");
    let at = firmspace::time::parse(stored["at"].as_s().unwrap()).unwrap();
    let week = chrono::Utc::now() - chrono::Duration::days(7);
    assert!(
        (at - week).num_seconds().abs() < 60,
        "clamped to a week ago: {at}"
    );
    assert!(
        s.review_reasons().await.is_empty(),
        "nothing for a person: the message is kept"
    );
}
