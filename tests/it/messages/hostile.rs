//! A hostile sender at the message webhook: refused before anything is read, or, when the token
//! holds and the body is absurd, kept raw for a person with nothing else written.

use super::{telegram_update, Setup};
use crate::support::request;
use firmspace::store::item::Read;
use serde_json::json;

#[tokio::test]
async fn forged_oversized_and_misrouted_deliveries_are_refused_and_write_nothing() {
    let s = Setup::new(Setup::telegram).await;
    let body = telegram_update(1, "hi", None);
    let before = s.env.items().await.len();
    let mut big = s.telegram_request(&"x".repeat(10));
    *big.body_mut() = lambda_http::Body::from(vec![b' '; 300 * 1024]);
    let unknown = format!("/hooks/{}_0123456789abcdef/messages", s.org);
    let calls_route = format!("/hooks/{}/calls", s.hook.id);
    let cases = [
        (
            "no token",
            request("POST", &s.path(), &[], body.clone()),
            401,
        ),
        (
            "a token of another length",
            request(
                "POST",
                &s.path(),
                &[(
                    "x-telegram-bot-api-secret-token",
                    "telegram-secret-token-12",
                )],
                body.clone(),
            ),
            401,
        ),
        ("over 256 KiB", big, 413),
        (
            "an unknown integration",
            request(
                "POST",
                &unknown,
                &[("x-telegram-bot-api-secret-token", super::SECRET_TOKEN)],
                body.clone(),
            ),
            404,
        ),
        ("PUT", request("PUT", &s.path(), &[], body.clone()), 405),
        (
            "another kind's route",
            request("POST", &calls_route, &[], body.clone()),
            404,
        ),
    ];
    for (what, req, expected) in cases {
        let (status, answer) = s.answer(req).await;
        assert_eq!(status, expected, "{what}: {answer}");
        assert!(
            answer["error"].is_string() && answer["detail"].is_string(),
            "{what}: {answer}"
        );
        let shown = answer.to_string();
        assert!(
            !shown.contains(super::SECRET_TOKEN) && !shown.contains(super::BOT_TOKEN),
            "{what}"
        );
    }
    assert_eq!(s.env.items().await.len(), before, "nothing was written");
}

#[tokio::test]
async fn a_verified_body_that_cannot_be_a_message_is_kept_for_review_and_nothing_else() {
    let s = Setup::new(Setup::telegram).await;
    let long = telegram_update(2, &"x".repeat(firmspace::messages::TEXT_MAX + 1), None);
    let spaced = r#"{"update_id":3,"message":{"message_id":3,"chat":{"id":"4 2"},"from":{"id":42},"text":"hi"}}"#;
    for body in [long.as_str(), spaced, "not json"] {
        let (status, answer) = s.answer(s.telegram_request(body)).await;
        assert_eq!(
            (status, answer["status"].as_str()),
            (200, Some("unparseable")),
            "{answer}"
        );
    }
    let reviews = s.items_of("review").await;
    assert_eq!(reviews.len(), 3);
    assert!(reviews
        .iter()
        .all(|r| r.opt_str("reason") == Some("unparseable_payload")));
    for kind in ["message", "conversation", "contact"] {
        assert_eq!(s.env.count(kind).await, 0, "{kind}");
    }
}

#[tokio::test]
async fn an_inward_attachment_url_is_never_fetched_and_the_message_is_kept() {
    let secret = firmspace::signature::standard::generate_secret();
    let kept = secret.clone();
    let s = Setup::new(
        move |_| firmspace::messages::providers::MessageSettings::Standard {
            secret: kept.into(),
        },
    )
    .await;
    // On the test stage loopback is allowed; the metadata address never is.
    let body =
        json!({"type": "message.received", "data": {"message_id": "m-ssrf", "chat_id": "c-1",
        "from": {"id": "u-1", "name": "Mallory"}, "text": "see file",
        "attachments": [{"url": "http://169.254.169.254/latest/meta-data/", "name": "creds.txt"}]}})
        .to_string();
    let now = chrono::Utc::now().timestamp();
    let signature =
        firmspace::signature::standard::sign(&secret, "msg_ssrf", now, body.as_bytes()).unwrap();
    let req = request(
        "POST",
        &s.path(),
        &[
            ("webhook-id", "msg_ssrf"),
            ("webhook-timestamp", &now.to_string()),
            ("webhook-signature", &signature),
        ],
        body.into_bytes(),
    );
    let (status, answer) = s.answer(req).await;
    assert_eq!(
        (status, answer["duplicate"].as_bool()),
        (200, Some(false)),
        "{answer}"
    );
    let message = s.items_of("message").await.remove(0);
    assert!(message
        .opt_str("attachments")
        .unwrap()
        .contains("download failed"));
    assert_eq!(s.objects().await, 0);
    let reasons = s.review_reasons().await;
    assert_eq!(reasons, ["attachment_failed"]);
}
