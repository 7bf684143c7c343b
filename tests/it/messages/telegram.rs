//! Telegram: the secret token, fifty copies of one photo, two messages of a new chat, a repeat
//! with other content, a file too large, and the API's reads.

use super::{telegram_update, Setup};
use crate::consequences::{fanout_app, stream_event, workers};
use crate::support::channels::BIG;
use crate::support::queues::receive;
use crate::support::{api, request};
use chrono::Utc;
use firmspace::messages::media::Files;
use serde_json::Value;
use std::collections::HashSet;
use std::time::Duration;

#[tokio::test]
async fn fifty_copies_of_a_telegram_photo_are_one_message_one_object_and_their_consequences_once() {
    let s = Setup::new(Setup::telegram).await;
    let body = telegram_update(7, "the invoice", Some("PHOTO1"));
    let copies = (0..50).map(|_| s.answer(s.telegram_request(&body)));
    let answers = futures::future::join_all(copies).await;
    assert!(
        answers.iter().all(|(status, _)| *status == 200),
        "{answers:?}"
    );
    let firsts = answers
        .iter()
        .filter(|(_, a)| a["duplicate"] == false)
        .count();
    assert_eq!(firsts, 1, "one copy stored it: {answers:?}");
    let conversations: HashSet<&Value> =
        answers.iter().map(|(_, a)| &a["conversation_id"]).collect();
    assert_eq!(conversations.len(), 1);
    assert!(answers.iter().all(|(_, a)| a["message_id"] == "42:7"));
    let kinds = s.env.kinds().await;
    let count = |kind: &str| kinds.get(kind).copied().unwrap_or(0);
    assert_eq!(
        (
            count("message"),
            count("conversation"),
            count("contact"),
            count("identity")
        ),
        (1, 1, 1, 1)
    );
    assert_eq!(
        s.objects().await,
        1,
        "concurrent first copies leave one object"
    );

    a_retry_downloads_nothing(&s, &body).await;
    // The lead is named as Telegram names the sender.
    let contact = &s.items_of("contact").await[0];
    assert_eq!(contact["name"].as_s().unwrap(), "Olena Koval");
    its_consequences_happen_once(&s).await;
}

/// A retry after the message is stored reads its key and downloads nothing.
async fn a_retry_downloads_nothing(s: &Setup, body: &str) {
    let downloads = s.stand_in.downloads();
    let lookups = s
        .stand_in
        .counts
        .lookups
        .load(std::sync::atomic::Ordering::SeqCst);
    let (status, again) = s.answer(s.telegram_request(body)).await;
    assert_eq!((status, again["duplicate"].as_bool()), (200, Some(true)));
    assert_eq!(s.stand_in.downloads(), downloads);
    assert_eq!(
        s.stand_in
            .counts
            .lookups
            .load(std::sync::atomic::Ordering::SeqCst),
        lookups
    );
}

/// Its consequences through the fan-out and the workers, each stream record delivered twice.
async fn its_consequences_happen_once(s: &Setup) {
    let item = s.items_of("message").await.remove(0);
    let (sqs, q, fanout) = fanout_app(&s.env).await;
    for _ in 0..2 {
        let out = fanout.process(stream_event(&item, "7"), Utc::now()).await;
        assert!(out.batch_item_failures.is_empty());
    }
    let w = workers(&s.env, Duration::from_secs(2), 5);
    let notes = receive(&sqs, &q.notifications, 1).await;
    let triggers = receive(&sqs, &q.automation, 1).await;
    // The activity line and the team's notification written by the fan-out, once; no rule
    // takes `message.received`: it is handled, sent nowhere.
    assert_eq!(s.env.count("activity").await, 1, "one activity line");
    assert_eq!((notes.len(), triggers.len()), (0, 0));
    w.notify_all(&notes).await;
    assert_eq!(
        s.env.count("notification").await,
        2,
        "one notification per member"
    );
}

#[tokio::test]
async fn two_messages_of_a_new_chat_make_one_conversation_listed_with_its_messages_in_order() {
    let s = Setup::new(Setup::telegram).await;
    let (first, second) = (
        telegram_update(1, "hello", None),
        telegram_update(2, "here is the photo", Some("PHOTO2")),
    );
    let (a, b) = tokio::join!(
        s.answer(s.telegram_request(&first)),
        s.answer(s.telegram_request(&second))
    );
    assert_eq!((a.0, b.0), (200, 200));
    assert_eq!(a.1["conversation_id"], b.1["conversation_id"]);
    assert_eq!(
        (
            s.env.count("conversation").await,
            s.env.count("message").await
        ),
        (1, 2)
    );
    assert_eq!(s.env.count("contact").await, 1);

    // The API lists the conversation, and its messages in time order with a readable URL.
    let config = crate::support::sdk_config().await;
    let api_app = api::app_with_files(&s.env, Some(Files::new(super::s3(&config), &s.bucket)));
    let key = &s.key;
    let (status, list) = api::call(&api_app, "GET", "/api/conversations", key, Value::Null).await;
    assert_eq!(status, 200, "{list}");
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["id"], a.1["conversation_id"]);
    assert_eq!(items[0]["chat_id"], "42");
    let path = format!(
        "/api/conversations/{}/messages",
        items[0]["id"].as_str().unwrap()
    );
    let (status, messages) = api::call(&api_app, "GET", &path, key, Value::Null).await;
    assert_eq!(status, 200);
    let messages = messages["items"].as_array().unwrap().clone();
    let texts: Vec<&str> = messages
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["hello", "here is the photo"]);
    let attachment = &messages[1]["attachments"][0];
    assert_eq!(attachment["size"], crate::support::channels::FILE.len());
    let url = attachment["url"].as_str().expect("a presigned URL");
    let served = reqwest::get(url).await.unwrap();
    let header = |name: &str| {
        served
            .headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    assert_eq!(
        (header("content-disposition"), header("content-type")),
        (
            Some("attachment".into()),
            Some(
                firmspace::messages::media::served_type(
                    attachment["content_type"].as_str().unwrap()
                )
                .into()
            )
        ),
        "a download of an allowed type, whatever the sender claimed"
    );
    let bytes = served.bytes().await.unwrap();
    assert_eq!(&bytes[..], crate::support::channels::FILE);
    let (status, _) = api::call(
        &api_app,
        "GET",
        "/api/conversations/cv_nope/messages",
        key,
        Value::Null,
    )
    .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn two_messages_alike_but_for_their_ids_are_two_messages() {
    let s = Setup::new(Setup::telegram).await;
    let date = Utc::now().timestamp() - 60;
    let alike = |message_id: i64| {
        let mut update: Value =
            serde_json::from_str(&telegram_update(message_id, "hello", None)).unwrap();
        update["message"]["date"] = date.into();
        update.to_string()
    };
    // The same sender, chat, text and second; two message ids: a customer who wrote twice.
    for id in [7, 8] {
        let (status, answer) = s.answer(s.telegram_request(&alike(id))).await;
        assert_eq!(
            (status, answer["duplicate"].as_bool()),
            (200, Some(false)),
            "{answer}"
        );
    }
    let (_, again) = s.answer(s.telegram_request(&alike(7))).await;
    assert_eq!(again["duplicate"], true);
    assert_eq!(s.env.count("message").await, 2);
    assert!(s.review_reasons().await.is_empty());
}

#[tokio::test]
async fn a_wrong_token_is_refused_and_other_updates_are_ignored_with_nothing_written() {
    let s = Setup::new(Setup::telegram).await;
    let body = telegram_update(3, "hi", None);
    let forged = request(
        "POST",
        &s.path(),
        &[("x-telegram-bot-api-secret-token", "guessed")],
        body.as_bytes().to_vec(),
    );
    assert_eq!(s.answer(forged).await.0, 401);
    let edited =
        r#"{"update_id":5,"edited_message":{"message_id":3,"chat":{"id":42},"text":"hi!"}}"#;
    let (status, answer) = s.answer(s.telegram_request(edited)).await;
    assert_eq!((status, answer["status"].as_str()), (200, Some("ignored")));
    // A Telegram integration answers no handshake.
    let get = request(
        "GET",
        &format!("{}?hub.mode=subscribe", s.path()),
        &[],
        Vec::new(),
    );
    assert_eq!(s.answer(get).await.0, 405);
    assert!(s.env.items().await.iter().all(|i| {
        let kind = i
            .get("kind")
            .and_then(|k| k.as_s().ok())
            .map(String::as_str);
        !matches!(kind, Some("message" | "conversation" | "contact"))
    }));
}

#[tokio::test]
async fn a_repeat_with_other_text_keeps_the_first_and_a_file_too_large_is_kept_for_review() {
    let s = Setup::new(Setup::telegram).await;
    let (status, _) = s
        .answer(s.telegram_request(&telegram_update(4, "first", None)))
        .await;
    assert_eq!(status, 200);
    let (status, again) = s
        .answer(s.telegram_request(&telegram_update(4, "edited?", None)))
        .await;
    assert_eq!((status, again["duplicate"].as_bool()), (200, Some(true)));
    let message = &s.items_of("message").await[0];
    assert_eq!(message["text"].as_s().unwrap(), "first");

    let (status, big) = s
        .answer(s.telegram_request(&telegram_update(5, "big", Some(BIG))))
        .await;
    assert_eq!((status, big["duplicate"].as_bool()), (200, Some(false)));
    let reviews: Vec<String> = s
        .items_of("review")
        .await
        .iter()
        .map(|r| r["reason"].as_s().unwrap().clone())
        .collect();
    assert!(
        reviews.contains(&"payload_mismatch".to_owned()),
        "{reviews:?}"
    );
    assert!(
        reviews.contains(&"attachment_too_large".to_owned()),
        "{reviews:?}"
    );
    assert_eq!(s.objects().await, 0, "nothing of 25 MB was downloaded");
    assert_eq!(s.stand_in.downloads(), 0);
}

#[tokio::test]
async fn a_first_message_costs_two_dynamodb_calls_and_one_s3_put_and_a_repeat_one_read() {
    let s = Setup::new(Setup::telegram).await;
    // The first delivery loads the integration (one GetItem and one KMS Decrypt) and makes the
    // conversation and the lead; what follows is the warm path of a chat that exists.
    let (status, _) = s
        .answer(s.telegram_request(&telegram_update(1, "hi", None)))
        .await;
    assert_eq!(status, 200);
    s.env.calls.clear();
    let body = telegram_update(2, "the photo", Some("PHOTO3"));
    let (status, first) = s.answer(s.telegram_request(&body)).await;
    assert_eq!((status, first["duplicate"].as_bool()), (200, Some(false)));
    assert_eq!(
        s.env.calls.take(),
        ["BatchGetItem", "S3 PUT", "PutItem"],
        "one read of the key, conversation and sender; the file; one put (the fan-out moves the conversation)"
    );
    let message = message_with_text(&s, "the photo").await;
    assert_eq!(
        message
            .get("moves_conversation")
            .and_then(|v| v.as_bool().ok()),
        Some(&true),
        "the fan-out is to move its conversation forward"
    );
    s.env.calls.clear();
    let (status, again) = s.answer(s.telegram_request(&body)).await;
    assert_eq!((status, again["duplicate"].as_bool()), (200, Some(true)));
    assert_eq!(
        s.env.calls.take(),
        ["BatchGetItem"],
        "a repeat is one read and no write"
    );
}

#[tokio::test]
async fn a_file_without_a_told_size_is_cut_off_at_20_mb_and_the_message_kept() {
    let s = Setup::new(Setup::telegram).await;
    let body = telegram_update(6, "the scan", Some(crate::support::channels::STREAMED));
    let (status, answer) = s.answer(s.telegram_request(&body)).await;
    assert_eq!(
        (status, answer["duplicate"].as_bool()),
        (200, Some(false)),
        "{answer}"
    );
    let message = &s.items_of("message").await[0];
    let attachments: Value = serde_json::from_str(message["attachments"].as_s().unwrap()).unwrap();
    assert!(
        attachments[0]["error"]
            .as_str()
            .unwrap()
            .starts_with("too large"),
        "{attachments}"
    );
    assert_eq!(s.objects().await, 0);
    let review = &s.items_of("review").await[0];
    assert_eq!(review["reason"].as_s().unwrap(), "attachment_too_large");
}

/// A message to a conversation that is there is one put; the fan-out, reading it, moves the
/// conversation to the top of the list, once however often it reads it.
#[tokio::test]
async fn the_fan_out_moves_a_known_conversation_to_the_top_once() {
    let s = Setup::new(Setup::telegram).await;
    let other_chat = |update: String| {
        update
            .replace(r#""chat":{"id":42"#, r#""chat":{"id":43"#)
            .replace(r#""from":{"id":42"#, r#""from":{"id":43"#)
    };
    for update in [
        telegram_update(1, "first chat", None),
        other_chat(telegram_update(2, "second chat", None)),
        telegram_update(3, "first chat again", None),
    ] {
        let (status, _) = s.answer(s.telegram_request(&update)).await;
        assert_eq!(status, 200);
    }
    let order = || async {
        firmspace::messages::conversations(&s.env.store, &s.org)
            .await
            .unwrap()
            .into_iter()
            .map(|c| c.chat_id)
            .collect::<Vec<_>>()
    };
    assert_eq!(order().await, ["43", "42"], "not yet read by the fan-out");
    let again = message_with_text(&s, "first chat again").await;
    let (sqs, queues, fanout) = fanout_app(&s.env).await;
    for _ in 0..2 {
        let out = fanout.process(stream_event(&again, "9"), Utc::now()).await;
        assert!(out.batch_item_failures.is_empty());
    }
    assert_eq!(order().await, ["42", "43"]);

    // A batch the stream gave up on: its replay moves the conversation as the fan-out would.
    let later = telegram_update(4, "first chat, given up", None)
        .replace(r#""chat":{"id":42"#, r#""chat":{"id":43"#)
        .replace(r#""from":{"id":42"#, r#""from":{"id":43"#);
    assert_eq!(s.answer(s.telegram_request(&later)).await.0, 200);
    assert_eq!(order().await, ["42", "43"], "not read by the fan-out");
    let given_up = message_with_text(&s, "first chat, given up").await;
    let pk = given_up["pk"].as_s().unwrap();
    let publisher = firmspace::effects::queue::Publisher { sqs, queues };
    let sent = firmspace::ops::events::replay(&s.env.store, &publisher, pk)
        .await
        .unwrap();
    assert!(sent >= 1, "its missing consequences: {sent}");
    assert_eq!(order().await, ["43", "42"]);
    let conversations = s.env.count("conversation").await;
    assert_eq!(conversations, 2);
}

/// The stored message whose text is `text`.
async fn message_with_text(s: &Setup, text: &str) -> firmspace::store::Item {
    s.env
        .items_of("message")
        .await
        .into_iter()
        .find(|m| {
            m.get("text")
                .and_then(|t| t.as_s().ok())
                .map(String::as_str)
                == Some(text)
        })
        .unwrap_or_else(|| panic!("a message {text:?}"))
}
