//! The prepaid ledger end to end: an incoming SMS through the gateway, delivered three times.

use super::{count, stack};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// `sms.received` posted three times through the gateway to sms-webhook: one inbox line, one
/// conversation message, and one notification for each member.
#[tokio::test]
async fn an_incoming_sms_delivered_three_times_through_the_gateway_is_one_line_and_one_message() {
    let stack = stack();
    let (key, _, _) = stack.org_with_integration().await;
    let (post, get) = (reqwest::Method::POST, reqwest::Method::GET);
    for user in ["u1", "u2"] {
        let member = json!({"user_id": user, "name": user});
        assert_eq!(
            stack
                .api(post.clone(), "/api/members", &key, member)
                .await
                .0,
            201
        );
    }
    let (status, hook) = stack
        .api(
            post.clone(),
            "/api/integrations",
            &key,
            json!({"kind": "sms", "provider": "standard"}),
        )
        .await;
    assert_eq!(status, 201, "{hook}");
    let (url, secret) = (
        hook["webhook_url"].as_str().unwrap(),
        hook["secret"].as_str().unwrap(),
    );
    assert!(url.ends_with("/sms"), "{url}");
    let body =
        json!({"type": "sms.received", "data": {"message_id": "MOe2e", "from": "+15550009999",
        "to": "+15550001111", "text": "Is my order ready?", "segments": 1}})
        .to_string();
    let mut answers = Vec::new();
    for _ in 0..3 {
        answers.push(stack.deliver(url, secret, "evt_e2e_mo", &body).await);
    }
    assert!(answers.iter().all(|(s, _)| *s == 200), "{answers:?}");
    let duplicates: Vec<bool> = answers
        .iter()
        .map(|(_, a)| a["duplicate"] == true)
        .collect();
    assert_eq!(duplicates, [false, true, true], "{answers:?}");
    let inbox_id = answers[0].1["inbox_id"].as_str().unwrap();
    assert!(answers.iter().all(|(_, a)| a["inbox_id"] == inbox_id));
    let conversation = answers[0].1["conversation_id"].as_str().unwrap().to_owned();

    let observe = || async {
        let inbox = stack
            .api(get.clone(), "/api/inbox", &key, Value::Null)
            .await
            .1;
        let path = format!("/api/conversations/{conversation}/messages");
        let messages = count(&stack.api(get.clone(), &path, &key, Value::Null).await.1);
        let mut notes = Vec::new();
        for user in ["u1", "u2"] {
            let path = format!("/api/notifications?recipient={user}");
            notes.push(count(
                &stack.api(get.clone(), &path, &key, Value::Null).await.1,
            ));
        }
        (count(&inbox), messages, notes)
    };
    let expected = (1, 1, vec![1, 1]);
    let started = Instant::now();
    let mut seen = observe().await;
    while seen != expected && started.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_millis(250)).await;
        seen = observe().await;
    }
    assert_eq!(
        seen, expected,
        "one inbox line, one message, one notification per member"
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(observe().await, expected, "late redeliveries add nothing");
    stack.answers_follow_the_document().await;
}
