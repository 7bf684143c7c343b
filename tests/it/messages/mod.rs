//! Messages in-process against ministack (DynamoDB, S3, SQS), with a loopback stand-in for
//! Telegram's and WhatsApp's APIs: each message stored once however often and however
//! concurrently it arrives, in one conversation, from one lead, its attachment one S3 object,
//! its consequences once.

mod api;
mod hostile;
mod replies;
mod telegram;
mod whatsapp;

use crate::support::channels::{self, Channels};
use crate::support::{json_of, request, TestEnv};
use chrono::Utc;
use firmspace::ids::{IntegrationId, OrgId};
use firmspace::integrations::{self, Integration, Settings};
use firmspace::messages::media::{Files, Media};
use firmspace::messages::providers::MessageSettings;
use firmspace::orgs::{self, Member};
use serde_json::Value;
use std::time::Duration;

pub use crate::support::channels::{ACCESS_TOKEN, BOT_TOKEN};
pub const SECRET_TOKEN: &str = "telegram-secret-token-1";
pub const APP_SECRET: &str = "whatsapp-app-secret";
pub const VERIFY_TOKEN: &str = "whatsapp-verify-token";

/// A fresh table and bucket, an organisation with two members, one messages integration whose
/// API is the stand-in, and the message webhook.
pub struct Setup {
    pub env: TestEnv,
    pub org: OrgId,
    /// The organisation's API key.
    pub key: String,
    pub hook: IntegrationId,
    pub app: message_webhook::App,
    pub stand_in: Channels,
    pub s3: aws_sdk_s3::Client,
    pub bucket: String,
}

pub fn s3(config: &aws_config::SdkConfig) -> aws_sdk_s3::Client {
    firmspace::aws::s3(config, true)
}

impl Setup {
    pub async fn new(settings: impl FnOnce(String) -> MessageSettings) -> Self {
        Self::with_delay(settings, Duration::ZERO).await
    }

    /// As `new`, with the stand-in answering sends after `send_delay`.
    pub async fn with_delay(
        settings: impl FnOnce(String) -> MessageSettings,
        send_delay: Duration,
    ) -> Self {
        let env = TestEnv::new().await;
        let (org, key) = orgs::create_org(&env.store, "Test Org", Utc::now())
            .await
            .unwrap();
        let key = secrecy::ExposeSecret::expose_secret(&key).to_owned();
        for (user_id, name) in [("u1", "Olena"), ("u2", "Taras")] {
            let member = Member {
                user_id: user_id.into(),
                name: name.into(),
            };
            orgs::add_member(
                &env.store,
                &org,
                &member,
                firmspace::orgs::MEMBERS_MAX,
                Utc::now(),
            )
            .await
            .unwrap();
        }
        let stand_in = channels::spawn(send_delay).await;
        let hook = IntegrationId::generate(&org);
        integrations::create(
            &env.store,
            &Integration {
                id: hook.clone(),
                settings: Settings::Messages(settings(stand_in.url())),
                created_at: Utc::now(),
            },
        )
        .await
        .unwrap();
        let (s3, bucket) = crate::support::bucket(&env).await;
        env.calls.clear();
        let media = Media::new(channels::apis(true), Files::new(s3.clone(), &bucket));
        let app = message_webhook::app(env.store.clone(), media);
        Self {
            env,
            org,
            key,
            hook,
            app,
            stand_in,
            s3,
            bucket,
        }
    }

    pub fn telegram(api_url: String) -> MessageSettings {
        MessageSettings::Telegram {
            bot_token: BOT_TOKEN.to_owned().into(),
            secret_token: SECRET_TOKEN.to_owned().into(),
            api_url: Some(api_url),
        }
    }

    pub fn whatsapp(api_url: String) -> MessageSettings {
        MessageSettings::Whatsapp {
            app_secret: APP_SECRET.to_owned().into(),
            access_token: ACCESS_TOKEN.to_owned().into(),
            verify_token: VERIFY_TOKEN.to_owned().into(),
            api_url: Some(api_url),
        }
    }

    pub fn path(&self) -> String {
        format!("/hooks/{}/messages", self.hook.id)
    }

    /// Posts `req` to the message webhook: the status and the JSON answer.
    pub async fn answer(&self, req: lambda_http::Request) -> (u16, Value) {
        let res = self
            .app
            .respond(&req, Utc::now())
            .await
            .unwrap_or_else(firmspace::http::ApiError::into_response);
        (res.status().as_u16(), json_of(&res))
    }

    pub fn telegram_request(&self, body: &str) -> lambda_http::Request {
        request(
            "POST",
            &self.path(),
            &[
                ("content-type", "application/json"),
                ("x-telegram-bot-api-secret-token", SECRET_TOKEN),
            ],
            body.as_bytes().to_vec(),
        )
    }

    pub fn whatsapp_request(&self, body: &str) -> lambda_http::Request {
        let signature = firmspace::signature::whatsapp::sign(APP_SECRET, body.as_bytes());
        request(
            "POST",
            &self.path(),
            &[
                ("content-type", "application/json"),
                ("x-hub-signature-256", &signature),
            ],
            body.as_bytes().to_vec(),
        )
    }

    /// How many objects the bucket holds.
    pub async fn objects(&self) -> usize {
        let listed = self
            .s3
            .list_objects_v2()
            .bucket(&self.bucket)
            .send()
            .await
            .unwrap();
        listed.contents().len()
    }

    /// The reasons of the review items filed.
    pub async fn review_reasons(&self) -> Vec<String> {
        self.items_of("review")
            .await
            .iter()
            .filter_map(|r| r.get("reason").and_then(|v| v.as_s().ok()).cloned())
            .collect()
    }

    /// The stored items of one kind.
    pub async fn items_of(&self, kind: &str) -> Vec<firmspace::store::Item> {
        self.env.items_of(kind).await
    }
}

/// A Telegram update from user 42 in chat 42: message `message_id` with `text`, and a photo
/// when `photo` is set.
pub fn telegram_update(message_id: i64, text: &str, photo: Option<&str>) -> String {
    let photo = photo.map_or(String::new(), |id| {
        format!(r#","photo":[{{"file_id":"{id}-small","width":90,"height":90}},{{"file_id":"{id}","width":1280,"height":960}}]"#)
    });
    format!(
        r#"{{"update_id":{},"message":{{"message_id":{message_id},"date":{},"from":{{"id":42,"is_bot":false,"first_name":"Olena","last_name":"Koval"}},"chat":{{"id":42,"type":"private"}},"text":{text:?}{photo}}}}}"#,
        1000 + message_id,
        Utc::now().timestamp() - 100 + message_id,
    )
}
