//! The `reply` rule action: sent once through the channel's API and stored as an outgoing
//! message once; an unclear send is never repeated (`needs_check`); a channel that cannot reply
//! ends the run `failed` with a review item.

use super::{telegram_update, Setup};
use crate::consequences::workers;
use crate::support::queues::event_of;
use chrono::Utc;
use firmspace::effects::automation::{self, Action};
use firmspace::effects::runs::{self, RunState};
use firmspace::effects::{Consequence, Trigger};
use firmspace::messages::providers::MessageSettings;
use firmspace::messages::Message;
use firmspace::store::item::Read;
use serde_json::json;
use std::time::Duration;

/// A `reply` rule, one message stored, and the `message.received` trigger it fired, as the
/// automation queue would carry it.
async fn replying(s: &Setup, body: String) -> (String, firmspace::ids::EventKey, String) {
    let rule = automation::create_rule(
        &s.env.store,
        &s.org,
        Trigger::MessageReceived,
        Action::Reply {
            text: "Thanks, we will answer soon".into(),
        },
        Utc::now(),
    )
    .await
    .unwrap();
    let (status, answer) = s.answer(s.telegram_request(&body)).await;
    assert_eq!(status, 200, "{answer}");
    let item = s.items_of("message").await.remove(0);
    let fired = Message::from_item(&item)
        .unwrap()
        .consequences()
        .into_iter()
        .find(|c| matches!(c, Consequence::Trigger(_)))
        .expect("message.received");
    let Consequence::Trigger(trigger) = &fired else {
        unreachable!()
    };
    let key = trigger.event_key.clone();
    (rule.rule_id, key, serde_json::to_string(&fired).unwrap())
}

#[tokio::test]
async fn a_reply_is_sent_once_and_stored_as_an_outgoing_message_once() {
    let s = Setup::new(Setup::telegram).await;
    let (rule, key, trigger) = replying(&s, telegram_update(11, "do you deliver?", None)).await;
    let w = workers(&s.env, Duration::from_secs(2), 5);
    for i in 0..3 {
        let out = w
            .automation
            .process(event_of(&format!("t{i}"), &trigger), Utc::now())
            .await;
        assert!(out.batch_item_failures.is_empty());
    }
    assert_eq!(s.stand_in.sends(), 1);
    assert_eq!(
        s.stand_in.sent()[0],
        json!({"chat_id": "42", "text": "Thanks, we will answer soon"})
    );
    let state = runs::run_state(&s.env.store, &s.org, &rule, &key)
        .await
        .unwrap();
    assert_eq!(state, Some(RunState::Sent));
    let outgoing: Vec<_> = s
        .items_of("message")
        .await
        .into_iter()
        .filter(|m| m.opt_str("direction") == Some("outbound"))
        .collect();
    assert_eq!(outgoing.len(), 1);
    assert_eq!(outgoing[0].opt_str("provider_id"), Some("42:9001"));
    assert_eq!(outgoing[0].opt_str("status"), Some("sent"));
}

#[tokio::test]
async fn a_reply_whose_channel_times_out_after_receiving_is_sent_once_and_needs_check() {
    // The stand-in holds the answer past the 2 s the worker waits.
    let s = Setup::with_delay(Setup::telegram, Duration::from_secs(3)).await;
    let (rule, key, trigger) = replying(&s, telegram_update(12, "hello?", None)).await;
    let w = workers(&s.env, Duration::from_secs(2), 5);
    for i in 0..2 {
        let out = w
            .automation
            .process(event_of(&format!("t{i}"), &trigger), Utc::now())
            .await;
        assert!(out.batch_item_failures.is_empty());
    }
    assert_eq!(s.stand_in.sends(), 1, "never sent blindly a second time");
    let state = runs::run_state(&s.env.store, &s.org, &rule, &key)
        .await
        .unwrap();
    assert_eq!(state, Some(RunState::NeedsCheck));
    let reviews: Vec<_> = s.items_of("review").await;
    assert!(reviews
        .iter()
        .any(|r| r.opt_str("reason") == Some("needs_check")));
    assert_eq!(
        s.items_of("message").await.len(),
        1,
        "no outgoing message is stored for a send nobody confirmed"
    );
}

#[tokio::test]
async fn a_reply_on_the_generic_channel_fails_its_run_with_a_review_item() {
    let secret = firmspace::signature::standard::generate_secret();
    let kept = secret.clone();
    let s = Setup::new(move |_| MessageSettings::Standard {
        secret: kept.into(),
    })
    .await;
    let body = json!({"type": "message.received", "data": {"message_id": "m-1", "chat_id": "c-1",
        "from": {"id": "u-1", "name": "Iryna"}, "text": "hi"}})
    .to_string();
    let now = Utc::now().timestamp();
    let signature =
        firmspace::signature::standard::sign(&secret, "msg_1", now, body.as_bytes()).unwrap();
    let req = crate::support::request(
        "POST",
        &s.path(),
        &[
            ("webhook-id", "msg_1"),
            ("webhook-timestamp", &now.to_string()),
            ("webhook-signature", &signature),
        ],
        body.clone().into_bytes(),
    );
    let rule = automation::create_rule(
        &s.env.store,
        &s.org,
        Trigger::MessageReceived,
        Action::Reply {
            text: "Thanks".into(),
        },
        Utc::now(),
    )
    .await
    .unwrap();
    assert_eq!(s.answer(req).await.0, 200);
    let item = s.items_of("message").await.remove(0);
    let message = Message::from_item(&item).unwrap();
    let fired = message
        .consequences()
        .into_iter()
        .find(|c| matches!(c, Consequence::Trigger(_)))
        .unwrap();
    let w = workers(&s.env, Duration::from_secs(2), 5);
    for i in 0..2 {
        let body = serde_json::to_string(&fired).unwrap();
        let out = w
            .automation
            .process(event_of(&format!("t{i}"), &body), Utc::now())
            .await;
        assert!(out.batch_item_failures.is_empty());
    }
    let state = runs::run_state(&s.env.store, &s.org, &rule.rule_id, &message.key())
        .await
        .unwrap();
    assert_eq!(state, Some(RunState::Failed));
    let reasons = s.review_reasons().await;
    assert_eq!(reasons, ["reply_unsupported"]);
    assert_eq!(s.stand_in.sends(), 0);
}

/// `count` other customers write after the caller, each in a conversation of their own, a
/// hundred to a delivery: the caller's conversation is no longer among the newest 200.
async fn others_write_since(s: &Setup, count: usize) {
    let later = (Utc::now().timestamp() + 1).to_string();
    for batch in (0..count).collect::<Vec<_>>().chunks(100) {
        let messages: Vec<_> = batch
            .iter()
            .map(|i| {
                json!({"from": format!("38067{i:07}"), "id": format!("wamid.OTHER{i}"),
                "timestamp": later, "type": "text", "text": {"body": "hello"}})
            })
            .collect();
        let body = json!({"object": "whatsapp_business_account", "entry": [{"id": "W", "changes": [{"field": "messages", "value": {
            "messaging_product": "whatsapp", "metadata": {"phone_number_id": "PN1"}, "messages": messages}}]}]})
        .to_string();
        assert_eq!(s.answer(s.whatsapp_request(&body)).await.0, 200);
    }
}

#[tokio::test]
async fn a_missed_call_is_answered_in_the_callers_whatsapp_conversation() {
    let s = Setup::new(Setup::whatsapp).await;
    automation::create_rule(
        &s.env.store,
        &s.org,
        Trigger::CallMissed,
        Action::Reply {
            text: "Sorry we missed your call".into(),
        },
        Utc::now(),
    )
    .await
    .unwrap();
    let body = json!({"object": "whatsapp_business_account", "entry": [{"id": "W", "changes": [{"field": "messages", "value": {
        "messaging_product": "whatsapp", "metadata": {"phone_number_id": "PN1"},
        "contacts": [{"profile": {"name": "Taras"}, "wa_id": "380501234567"}],
        "messages": [{"from": "380501234567", "id": "wamid.CALLME", "timestamp": Utc::now().timestamp().to_string(), "type": "text", "text": {"body": "call me"}}]}}]}]})
    .to_string();
    assert_eq!(s.answer(s.whatsapp_request(&body)).await.0, 200);
    others_write_since(&s, 200).await;
    let fields = firmspace::calls::CallFields {
        call_id: "CA-77".into(),
        direction: "inbound".into(),
        peer: "+380501234567".into(),
        status: "no-answer".into(),
        duration: 0,
    };
    let firmspace::calls::Checked::Call(input) =
        fields.check(&s.org, "softphone", Utc::now()).unwrap()
    else {
        panic!("a final status");
    };
    let call = firmspace::calls::record(&s.env.store, &input)
        .await
        .unwrap();
    let messages = s.items_of("message").await;
    let caller = messages
        .iter()
        .find(|m| m.opt_str("provider_id") == Some("wamid.CALLME"));
    let writer = Message::from_item(caller.unwrap()).unwrap();
    assert_eq!(
        call.value().contact_id,
        writer.contact_id,
        "the caller is the writer's contact"
    );
    let fired = call
        .value()
        .consequences()
        .into_iter()
        .find(|c| matches!(c, Consequence::Trigger(_)))
        .expect("call.missed");
    let w = workers(&s.env, Duration::from_secs(2), 5);
    let out = w
        .automation
        .process(
            event_of("t1", &serde_json::to_string(&fired).unwrap()),
            Utc::now(),
        )
        .await;
    assert!(out.batch_item_failures.is_empty());
    assert_eq!(s.stand_in.sends(), 1);
    let sent = &s.stand_in.sent()[0];
    assert_eq!(
        (sent["to"].as_str(), sent["text"]["body"].as_str()),
        (Some("380501234567"), Some("Sorry we missed your call"))
    );
    let replies: Vec<_> = s
        .items_of("message")
        .await
        .into_iter()
        .filter(|m| m.opt_str("direction") == Some("outbound"))
        .collect();
    assert_eq!(replies.len(), 1);
    assert_eq!(
        replies[0].opt_str("conversation_id"),
        Some(writer.conversation_id.as_str())
    );
}

#[tokio::test]
async fn a_reply_left_sending_by_a_dead_attempt_is_never_sent_blindly() {
    let s = Setup::new(Setup::telegram).await;
    let (rule, key, trigger) = replying(&s, telegram_update(13, "anyone?", None)).await;
    // An attempt took the run an hour ago and died mid-send: its lease has run out.
    let an_hour_ago = Utc::now() - chrono::Duration::hours(1);
    let claim = runs::claim(
        &s.env.store,
        &s.org,
        &rule,
        &key,
        an_hour_ago,
        chrono::Duration::seconds(5),
        None,
    )
    .await
    .unwrap();
    assert!(matches!(claim, runs::Claim::Fresh(_)));
    let w = workers(&s.env, Duration::from_secs(2), 5);
    let out = w
        .automation
        .process(event_of("t1", &trigger), Utc::now())
        .await;
    assert!(out.batch_item_failures.is_empty());
    assert_eq!(
        s.stand_in.sends(),
        0,
        "whether the dead attempt sent is unknown: not sent again"
    );
    let state = runs::run_state(&s.env.store, &s.org, &rule, &key)
        .await
        .unwrap();
    assert_eq!(state, Some(RunState::NeedsCheck));
    assert!(s
        .items_of("review")
        .await
        .iter()
        .any(|r| r.opt_str("reason") == Some("needs_check")));
}
