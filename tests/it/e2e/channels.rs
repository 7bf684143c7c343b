//! Channels end to end: a Twilio callback and a Telegram update through the gateway, each
//! stored once with its consequences once; Telegram's API is a loopback stand-in the deployed
//! functions reach.

use super::{count, settle, stack};
use crate::support::channels;
use serde_json::{json, Value};
use std::time::Duration;

/// A Twilio status callback signed as Twilio signs it (over the webhook URL the api handed out)
/// reaches call-webhook through the gateway: one call, whatever the number of deliveries.
#[tokio::test]
async fn a_twilio_callback_through_the_gateway_is_one_call() {
    let stack = stack();
    let (key, _, _) = stack.org_with_integration().await;
    let token = "e2e-twilio-auth-token";
    let (status, hook) = stack
        .api(
            reqwest::Method::POST,
            "/api/integrations",
            &key,
            json!({"kind": "calls", "provider": "twilio", "auth_token": token}),
        )
        .await;
    assert_eq!(status, 201, "{hook}");
    let url = hook["webhook_url"].as_str().unwrap();
    let form = "CallSid=CAe2e&Direction=inbound&From=%2B380441234567&To=%2B380443334455&CallStatus=no-answer";
    let signature = firmspace::signature::twilio::sign(token, url, form.as_bytes());
    let mut statuses = Vec::new();
    for _ in 0..3 {
        let res = stack
            .http
            .post(url)
            .header("content-type", "application/x-www-form-urlencoded")
            .header("x-twilio-signature", &signature)
            .body(form)
            .send()
            .await
            .expect("webhook reachable");
        statuses.push(stack.answered("POST", res).await.0);
    }
    assert_eq!(statuses, [201, 200, 200]);
    let (_, calls) = stack
        .api(reqwest::Method::GET, "/api/calls", &key, Value::Null)
        .await;
    let items = calls["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{calls}");
    assert_eq!(
        (items[0]["key"].as_str(), items[0]["missed"].as_bool()),
        (Some("call:CAe2e:inbound"), Some(true))
    );
    stack.answers_follow_the_document().await;
}

/// Members u1 and u2, and two rules on a received message: a task, and a reply.
async fn a_team_that_answers(stack: &super::Stack, key: &str) {
    for user in ["u1", "u2"] {
        let member = json!({"user_id": user, "name": user});
        stack.post("/api/members", key, member, 201).await;
    }
    for action in [
        json!({"type": "create_task", "title": "Answer the customer"}),
        json!({"type": "reply", "text": "Thanks, we got your message"}),
    ] {
        let rule = json!({"trigger": "message.received", "action": action});
        stack.post("/api/rules", key, rule, 201).await;
    }
}

/// What the consequences of the message made: (activity lines of `contact`, notifications of u1
/// and u2, tasks, messages of `conversation`, sends through the stand-in).
async fn consequences(
    stack: &super::Stack,
    key: &str,
    contact: &str,
    conversation: &str,
    stand_in: &channels::Channels,
) -> (usize, Vec<usize>, usize, usize, usize) {
    let activity = count(
        &stack
            .get(&format!("/api/activity/contact/{contact}"), key)
            .await,
    );
    let mut notes = Vec::new();
    for user in ["u1", "u2"] {
        let path = format!("/api/notifications?recipient={user}");
        notes.push(count(&stack.get(&path, key).await));
    }
    let tasks = count(&stack.get("/api/tasks", key).await);
    let path = format!("/api/conversations/{conversation}/messages");
    let messages = count(&stack.get(&path, key).await);
    (activity, notes, tasks, messages, stand_in.sends())
}

/// The update posted three times through the gateway with the integration's secret token.
async fn post_three_times(stack: &super::Stack, hook: &Value, update: &str) -> Vec<(u16, Value)> {
    let url = hook["webhook_url"].as_str().unwrap();
    let token = hook["secret_token"].as_str().unwrap();
    let mut answers = Vec::new();
    for _ in 0..3 {
        let res = stack
            .http
            .post(url)
            .header("content-type", "application/json")
            .header("x-telegram-bot-api-secret-token", token)
            .body(update.to_owned())
            .send()
            .await
            .expect("webhook reachable");
        answers.push(stack.answered("POST", res).await);
    }
    answers
}

/// A Telegram update with a photo, delivered three times through the gateway: one message, one
/// file, one lead, and each consequence once (an activity line, a notification per member, a
/// task, and one reply sent through the stand-in).
#[tokio::test]
async fn a_telegram_update_delivered_three_times_through_the_gateway_is_one_message() {
    let stack = stack();
    let (key, _, _) = stack.org_with_integration().await;
    a_team_that_answers(&stack, &key).await;
    let stand_in = channels::spawn(Duration::ZERO).await;
    let telegram = json!({"kind": "messages", "provider": "telegram", "bot_token": channels::BOT_TOKEN, "api_url": stand_in.url()});
    let hook = stack.post("/api/integrations", &key, telegram, 201).await;
    let update = json!({"update_id": 900, "message": {"message_id": 31, "date": chrono::Utc::now().timestamp(),
        "from": {"id": 4242, "first_name": "Iryna"}, "chat": {"id": 4242, "type": "private"},
        "caption": "is this in stock?", "photo": [{"file_id": "E2E", "width": 640, "height": 480}]}})
    .to_string();
    let answers = post_three_times(&stack, &hook, &update).await;
    assert!(answers.iter().all(|(s, _)| *s == 200), "{answers:?}");
    let firsts: Vec<bool> = answers
        .iter()
        .map(|(_, a)| a["duplicate"] == false)
        .collect();
    assert_eq!(firsts, [true, false, false], "{answers:?}");
    assert_eq!(stand_in.downloads(), 1, "the file was fetched once");
    let contacts = stack.get("/api/contacts", &key).await;
    assert_eq!(count(&contacts), 1, "{contacts}");
    assert_eq!(contacts["items"][0]["source"], "lead");
    let contact = contacts["items"][0]["contact_id"].as_str().unwrap();
    let conversation = answers[0].1["conversation_id"].as_str().unwrap();
    let observe = || consequences(&stack, &key, contact, conversation, &stand_in);
    // The message's line and the reply's line; a notification each; one task; the message and
    // the reply in the conversation; one send.
    let expected = (2, vec![1, 1], 1, 2, 1);
    let seen = settle(&expected, Duration::from_secs(60), observe).await;
    assert_eq!(seen, expected);
    the_first_message_holds_the_photo(&stack, &key, conversation).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(observe().await, expected, "late redeliveries add nothing");
    stack.answers_follow_the_document().await;
}

/// The conversation's first message is the inbound caption, its photo behind a presigned URL.
async fn the_first_message_holds_the_photo(stack: &super::Stack, key: &str, conversation: &str) {
    let path = format!("/api/conversations/{conversation}/messages");
    let messages = stack.get(&path, key).await;
    let first = &messages["items"][0];
    assert_eq!(
        (first["direction"].as_str(), first["text"].as_str()),
        (Some("inbound"), Some("is this in stock?"))
    );
    let file_url = first["attachments"][0]["url"]
        .as_str()
        .expect("a presigned URL");
    let bytes = stack
        .http
        .get(file_url)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(&bytes[..], channels::FILE);
}

#[tokio::test]
async fn a_csv_row_naming_an_open_invoice_pays_it_once_through_the_stack() {
    let stack = stack();
    let (key, _, _) = stack.org_with_integration().await;
    let olena = json!({"user_id": "u1", "name": "Olena"});
    stack.post("/api/members", &key, olena, 201).await;
    let forty = json!({"currency": "UAH", "gross": "40.00", "contact_id": "cBank"});
    let (_, invoice) = stack
        .api(reqwest::Method::POST, "/api/invoices", &key, forty)
        .await;
    let (invoice_id, number) = (
        invoice["id"].as_str().unwrap().to_owned(),
        invoice["number"].as_str().unwrap().to_owned(),
    );
    let bank = json!({"kind": "bank", "provider": "csv", "name": "Bank export"});
    let integration = stack.post("/api/integrations", &key, bank, 201).await;
    let upload_url = integration["upload_url"].as_str().unwrap().to_owned();
    let csv = format!("id,date,amount,currency,description\nE2E-1,2026-12-01,+40.00,UAH,Payment for {number}\nE2E-2,2026-12-01,-3.00,UAH,Fee\n");
    let upload = || async {
        let res = stack
            .http
            .post(&upload_url)
            .bearer_auth(&key)
            .header("content-type", "text/csv")
            .body(csv.clone())
            .send()
            .await
            .expect("api reachable");
        stack.answered("POST", res).await
    };
    let (status, first) = upload().await;
    assert_eq!(
        (status, first["imported"].as_u64()),
        (200, Some(2)),
        "{first}"
    );
    let invoice_path = format!("/api/invoices/{invoice_id}");
    let observe = || async {
        let inv = stack.get(&invoice_path, &key).await;
        let activity = count(&stack.get("/api/activity/contact/cBank", &key).await);
        let notes = count(&stack.get("/api/notifications?recipient=u1", &key).await);
        let paid = inv["paid"].as_str().unwrap_or_default().to_owned();
        (paid, activity, notes)
    };
    let expected = ("40.00".to_owned(), 1, 1);
    let seen = settle(&expected, Duration::from_secs(60), observe).await;
    assert_eq!(seen, expected);
    let (status, again) = upload().await;
    assert_eq!(
        (
            status,
            again["imported"].as_u64(),
            again["duplicates"].as_u64()
        ),
        (200, Some(0), Some(2))
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        observe().await,
        expected,
        "the same file again adds nothing"
    );
    let inv = stack.get(&invoice_path, &key).await;
    let payments = inv["payments"].as_array().cloned().unwrap_or_default();
    assert!(payments.iter().any(|p| p["source"] == "bank"), "{inv}");
    stack.answers_follow_the_document().await;
}
