//! Calling the `api` function in-process, as the CRM would.

use super::{json_of, request, TestEnv};
use api::App;
use serde_json::{json, Value};

pub const ADMIN: &str = "admin-token-for-tests";

pub fn app(env: &TestEnv) -> App {
    app_with_files(env, None)
}

/// The api, listing attachments with presigned URLs of `files`.
pub fn app_with_files(env: &TestEnv, files: Option<firmspace::messages::media::Files>) -> App {
    let mut settings = settings();
    settings.files = files;
    App::new(env.store.clone(), settings)
}

/// The test stage's settings: loopback allowed, no attachments bucket.
pub fn settings() -> api::Settings {
    api::Settings {
        admin_token: ADMIN.to_owned().into(),
        public_url: "https://hooks.test".into(),
        allows_loopback: true,
        files: None,
        imports: None,
        ai_models: firmspace::commands::model::Models::parse(
            "anthropic.claude-3-5-haiku-20241022-v1:0",
        ),
        // The local stage's: high enough that a suite setting up in bulk never meets them.
        limits: firmspace::orgs::rate::Limits {
            reads: 300,
            writes: 100_000,
            org_reads: 1_500,
            org_writes: 500_000,
        },
        uploads: None,
    }
}

pub async fn call(app: &App, method: &str, path: &str, token: &str, body: Value) -> (u16, Value) {
    call_with(
        app,
        method,
        path,
        &[("authorization", &format!("Bearer {token}"))],
        body,
    )
    .await
}

pub async fn call_with(
    app: &App,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Value,
) -> (u16, Value) {
    let raw = if body.is_null() {
        Vec::new()
    } else {
        body.to_string().into_bytes()
    };
    let res = app
        .handle(request(method, path, headers, raw))
        .await
        .unwrap();
    (res.status().as_u16(), json_of(&res))
}

/// An organisation made through `POST /api/orgs`; returns its API key.
pub async fn new_org(app: &App) -> String {
    let (status, body) = call(app, "POST", "/api/orgs", ADMIN, json!({"name": "Acme"})).await;
    assert_eq!(status, 201, "{body}");
    body["api_key"].as_str().unwrap().to_owned()
}
