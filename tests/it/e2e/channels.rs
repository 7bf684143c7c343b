//! Channels end to end: a Twilio callback and a Telegram update through the gateway, each
//! stored once with its consequences once; Telegram's API is a loopback stand-in the deployed
//! functions reach.

use super::{count, stack};
use crate::support::channels;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

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
        statuses.push(res.status().as_u16());
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
}

/// A Telegram update with a photo, delivered three times through the gateway: one message, one
/// file, one lead, and each consequence once (an activity line, a notification per member, a
/// task, and one reply sent through the stand-in).
#[tokio::test]
async fn a_telegram_update_delivered_three_times_through_the_gateway_is_one_message() {
    let stack = stack();
    let (key, _, _) = stack.org_with_integration().await;
    let post = reqwest::Method::POST;
    for user in ["u1", "u2"] {
        let (status, _) = stack
            .api(
                post.clone(),
                "/api/members",
                &key,
                json!({"user_id": user, "name": user}),
            )
            .await;
        assert_eq!(status, 201);
    }
    for action in [
        json!({"type": "create_task", "title": "Answer the customer"}),
        json!({"type": "reply", "text": "Thanks, we got your message"}),
    ] {
        let rule = json!({"trigger": "message.received", "action": action});
        assert_eq!(
            stack.api(post.clone(), "/api/rules", &key, rule).await.0,
            201
        );
    }
    let stand_in = channels::spawn(Duration::ZERO).await;
    let (status, hook) = stack
        .api(
            post.clone(),
            "/api/integrations",
            &key,
            json!({"kind": "messages", "provider": "telegram", "bot_token": channels::BOT_TOKEN, "api_url": stand_in.url()}),
        )
        .await;
    assert_eq!(status, 201, "{hook}");
    let url = hook["webhook_url"].as_str().unwrap();
    let token = hook["secret_token"].as_str().unwrap();
    let update = json!({"update_id": 900, "message": {"message_id": 31, "date": chrono::Utc::now().timestamp(),
        "from": {"id": 4242, "first_name": "Iryna"}, "chat": {"id": 4242, "type": "private"},
        "caption": "is this in stock?", "photo": [{"file_id": "E2E", "width": 640, "height": 480}]}})
    .to_string();
    let mut answers = Vec::new();
    for _ in 0..3 {
        let res = stack
            .http
            .post(url)
            .header("content-type", "application/json")
            .header("x-telegram-bot-api-secret-token", token)
            .body(update.clone())
            .send()
            .await
            .expect("webhook reachable");
        let status = res.status().as_u16();
        answers.push((status, res.json::<Value>().await.unwrap_or(Value::Null)));
    }
    assert!(answers.iter().all(|(s, _)| *s == 200), "{answers:?}");
    let firsts: Vec<bool> = answers
        .iter()
        .map(|(_, a)| a["duplicate"] == false)
        .collect();
    assert_eq!(firsts, [true, false, false], "{answers:?}");
    assert_eq!(stand_in.downloads(), 1, "the file was fetched once");

    let get = reqwest::Method::GET;
    let (_, contacts) = stack
        .api(get.clone(), "/api/contacts", &key, Value::Null)
        .await;
    assert_eq!(count(&contacts), 1, "{contacts}");
    assert_eq!(contacts["items"][0]["source"], "lead");
    let contact = contacts["items"][0]["contact_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let conversation = answers[0].1["conversation_id"].as_str().unwrap().to_owned();
    let observe = || async {
        let activity = count(
            &stack
                .api(
                    get.clone(),
                    &format!("/api/activity/contact/{contact}"),
                    &key,
                    Value::Null,
                )
                .await
                .1,
        );
        let mut notes = Vec::new();
        for user in ["u1", "u2"] {
            let path = format!("/api/notifications?recipient={user}");
            notes.push(count(
                &stack.api(get.clone(), &path, &key, Value::Null).await.1,
            ));
        }
        let tasks = count(
            &stack
                .api(get.clone(), "/api/tasks", &key, Value::Null)
                .await
                .1,
        );
        let path = format!("/api/conversations/{conversation}/messages");
        let messages = count(&stack.api(get.clone(), &path, &key, Value::Null).await.1);
        (activity, notes, tasks, messages, stand_in.sends())
    };
    // The message's line and the reply's line; a notification each; one task; the message and
    // the reply in the conversation; one send.
    let expected = (2, vec![1, 1], 1, 2, 1);
    let started = Instant::now();
    let mut seen = observe().await;
    while seen != expected && started.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_millis(250)).await;
        seen = observe().await;
    }
    assert_eq!(seen, expected);
    let (_, messages) = stack
        .api(
            get.clone(),
            &format!("/api/conversations/{conversation}/messages"),
            &key,
            Value::Null,
        )
        .await;
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
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(observe().await, expected, "late redeliveries add nothing");
}

/// A CSV upload through the gateway whose row names an open invoice: the invoice is paid once,
/// with one activity line and one notification; the same upload again adds nothing.
#[tokio::test]
async fn a_csv_row_naming_an_open_invoice_pays_it_once_through_the_stack() {
    let stack = stack();
    let (key, _, _) = stack.org_with_integration().await;
    let post = reqwest::Method::POST;
    let get = reqwest::Method::GET;
    let (status, _) = stack
        .api(
            post.clone(),
            "/api/members",
            &key,
            json!({"user_id": "u1", "name": "Olena"}),
        )
        .await;
    assert_eq!(status, 201);
    let (_, invoice) = stack
        .api(
            post.clone(),
            "/api/invoices",
            &key,
            json!({"currency": "UAH", "gross": "40.00", "contact_id": "cBank"}),
        )
        .await;
    let (invoice_id, number) = (
        invoice["id"].as_str().unwrap().to_owned(),
        invoice["number"].as_str().unwrap().to_owned(),
    );
    let (status, integration) = stack
        .api(
            post.clone(),
            "/api/integrations",
            &key,
            json!({"kind": "bank", "provider": "csv", "name": "Bank export"}),
        )
        .await;
    assert_eq!(status, 201, "{integration}");
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
        (
            res.status().as_u16(),
            res.json::<Value>().await.unwrap_or(Value::Null),
        )
    };
    let (status, first) = upload().await;
    assert_eq!(
        (status, first["imported"].as_u64()),
        (200, Some(2)),
        "{first}"
    );
    let observe = || async {
        let (_, inv) = stack
            .api(
                get.clone(),
                &format!("/api/invoices/{invoice_id}"),
                &key,
                Value::Null,
            )
            .await;
        let activity = count(
            &stack
                .api(
                    get.clone(),
                    "/api/activity/contact/cBank",
                    &key,
                    Value::Null,
                )
                .await
                .1,
        );
        let notes = count(
            &stack
                .api(
                    get.clone(),
                    "/api/notifications?recipient=u1",
                    &key,
                    Value::Null,
                )
                .await
                .1,
        );
        (
            inv["paid"].as_str().unwrap_or_default().to_owned(),
            activity,
            notes,
        )
    };
    let expected = ("40.00".to_owned(), 1, 1);
    let started = Instant::now();
    let mut seen = observe().await;
    while seen != expected && started.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_millis(250)).await;
        seen = observe().await;
    }
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
    let (_, inv) = stack
        .api(
            get,
            &format!("/api/invoices/{invoice_id}"),
            &key,
            Value::Null,
        )
        .await;
    let payments = inv["payments"].as_array().cloned().unwrap_or_default();
    assert!(payments.iter().any(|p| p["source"] == "bank"), "{inv}");
}
