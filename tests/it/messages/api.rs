//! The contract of messenger integrations and `reply` rules through `POST /api/...`.

use crate::support::api::{self, call};
use crate::support::TestEnv;
use serde_json::json;

#[tokio::test]
async fn messenger_integrations_answer_what_the_messenger_is_told() {
    let env = TestEnv::new().await;
    let app = api::app(&env);
    let key = api::new_org(&app).await;
    let post = |body| call(&app, "POST", "/api/integrations", &key, body);

    let (status, tg) =
        post(json!({"kind": "messages", "provider": "telegram", "bot_token": "123:abc"})).await;
    assert_eq!(status, 201, "{tg}");
    let id = tg["integration_id"].as_str().unwrap();
    assert_eq!(
        tg["webhook_url"],
        format!("https://hooks.test/hooks/{id}/messages")
    );
    assert!(firmspace::signature::telegram::valid_token(
        tg["secret_token"].as_str().unwrap()
    ));

    let (status, wa) = post(json!({"kind": "messages", "provider": "whatsapp", "app_secret": "s3cret", "access_token": "EAAG"})).await;
    assert_eq!(status, 201, "{wa}");
    assert!(wa["verify_token"].as_str().is_some_and(|t| t.len() >= 32));
    assert!(wa.get("app_secret").is_none() && wa.get("access_token").is_none());

    let (status, generic) = post(json!({"kind": "messages", "provider": "standard"})).await;
    assert_eq!(status, 201);
    assert!(generic["secret"].as_str().unwrap().starts_with("whsec_"));

    for (body, code) in [
        (
            json!({"kind": "messages", "provider": "whatsapp", "app_secret": "s"}),
            "missing_field",
        ),
        (
            json!({"kind": "messages", "provider": "telegram"}),
            "missing_field",
        ),
        (
            json!({"kind": "messages", "provider": "signal"}),
            "invalid_provider",
        ),
        (
            json!({"kind": "messages", "provider": "telegram", "bot_token": "1:a", "api_url": "ftp://x"}),
            "invalid_url",
        ),
        (
            json!({"kind": "messages", "provider": "standard", "api_url": "http://127.0.0.1:9"}),
            "invalid_url",
        ),
    ] {
        let (status, refused) = post(body.clone()).await;
        assert_eq!(
            (status, refused["error"].as_str()),
            (400, Some(code)),
            "{body}"
        );
    }
}

#[tokio::test]
async fn api_url_is_refused_where_the_stage_allows_no_loopback() {
    let env = TestEnv::new().await;
    let mut settings = api::settings();
    settings.allows_loopback = false;
    let app = ::api::App::new(env.store.clone(), settings);
    let key = api::new_org(&app).await;
    let (status, refused) = call(
        &app,
        "POST",
        "/api/integrations",
        &key,
        json!({"kind": "messages", "provider": "telegram", "bot_token": "1:a", "api_url": "https://stand-in.example.com"}),
    )
    .await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("invalid_url"))
    );
    assert_eq!(env.count("integration").await, 0);
}

#[tokio::test]
async fn a_reply_rule_answers_a_conversation_trigger_only() {
    let env = TestEnv::new().await;
    let app = api::app(&env);
    let key = api::new_org(&app).await;
    let rule = |trigger: &str| {
        call(
            &app,
            "POST",
            "/api/rules",
            &key,
            json!({"trigger": trigger, "action": {"type": "reply", "text": "Thanks!"}}),
        )
    };
    for trigger in ["message.received", "call.missed"] {
        let (status, made) = rule(trigger).await;
        assert_eq!(
            (status, made["action"]["type"].as_str()),
            (201, Some("reply")),
            "{made}"
        );
    }
    // Nothing of these is a conversation: a reply there would only ever fail.
    for trigger in ["invoice.paid", "lead.created", "credit_note.created"] {
        let (status, refused) = rule(trigger).await;
        assert_eq!(
            (status, refused["error"].as_str()),
            (400, Some("invalid_action")),
            "{trigger}: {refused}"
        );
    }
    let (status, empty) = call(
        &app,
        "POST",
        "/api/rules",
        &key,
        json!({"trigger": "message.received", "action": {"type": "reply", "text": " "}}),
    )
    .await;
    assert_eq!((status, empty["field"].as_str()), (400, Some("text")));
}
