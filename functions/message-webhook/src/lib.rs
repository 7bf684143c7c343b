#![forbid(unsafe_code)]
//! `POST /hooks/{integration_id}/messages` (and `GET` for WhatsApp's subscription handshake):
//! customers' messages on the shared edge. This crate is only what is particular to messages: a
//! verifier per messenger (Telegram's secret token, WhatsApp's `X-Hub-Signature-256`, Standard
//! Webhooks), a parser per messenger; `messages::deliver` records what a delivery carries.
//! WhatsApp deliveries are answered in the batch form; the others with one message.

use chrono::{DateTime, Utc};
use firmspace::config::{self, Config, ConfigError};
use firmspace::http::{query, ApiError};
use firmspace::integrations::{Integration, IntegrationKind};
use firmspace::messages::media::{Apis, Files, Media};
use firmspace::messages::providers::{MessageProvider, MessageSettings};
use firmspace::messages::{self, Delivery, Message};
use firmspace::review::Kind;
use firmspace::signature::{self, AnyVerifier, SignatureError, Verified};
use firmspace::store::Store;
use firmspace::webhook::{Edge, Parsed, Recorded, Source};
use secrecy::ExposeSecret;
use subtle::ConstantTimeEq;

/// The message webhook: the shared edge over the messages source.
pub type App = Edge<Messages>;

pub fn app(store: Store, media: Media) -> App {
    Edge::new(Messages { media }, store)
}

pub struct Messages {
    media: Media,
}

impl Source for Messages {
    const REVIEW: Kind = Kind::Message;
    const KIND: IntegrationKind = IntegrationKind::Messages;
    const HANDSHAKE: bool = true;
    type Settings = MessageSettings;
    type Verifier = AnyVerifier;
    type Event = Delivery;
    type Stored = Message;

    /// `ATTACHMENTS_BUCKET` holds attachments; `TELEGRAM_API_URL`, `WHATSAPP_API_URL` and
    /// `CHANNEL_TIMEOUT_MS` set the messengers' APIs (see `Apis::from_env`).
    async fn from_config(config: &Config) -> Result<Self, ConfigError> {
        let bucket = config::require("ATTACHMENTS_BUCKET")?;
        let apis = Apis::from_env(config.allows_loopback())?;
        let sdk = firmspace::aws::sdk_config(config.endpoint_url.as_deref()).await;
        let s3 = firmspace::aws::s3(&sdk, config.endpoint_url.is_some());
        Ok(Self {
            media: Media::new(apis, Files::new(s3, bucket)),
        })
    }

    fn verifier(&self, integration: &Integration) -> Result<AnyVerifier, SignatureError> {
        Ok(
            match Self::settings(integration).ok_or(SignatureError::BadKey)? {
                MessageSettings::Telegram { secret_token, .. } => Box::new(
                    signature::telegram::Verifier::new(secret_token.expose_secret())?,
                ),
                MessageSettings::Whatsapp { app_secret, .. } => Box::new(
                    signature::whatsapp::Verifier::new(app_secret.expose_secret())?,
                ),
                MessageSettings::Standard { secret } => {
                    Box::new(signature::standard::Verifier::new(secret.expose_secret())?)
                }
            },
        )
    }

    fn parse(
        &self,
        integration: &Integration,
        _verified: &Verified,
        body: &[u8],
        _now: DateTime<Utc>,
    ) -> Result<Parsed<Delivery>, String> {
        let posted = match Self::settings(integration).map(MessageSettings::provider) {
            Some(MessageProvider::Telegram) => messages::telegram(body)?,
            Some(MessageProvider::Whatsapp) => messages::whatsapp(body)?,
            Some(MessageProvider::Standard) => messages::standard(body)?,
            Some(MessageProvider::Sms) | None => return Err("not a messages integration".into()),
        };
        Delivery::check(posted)
    }

    async fn record(
        &self,
        store: &Store,
        integration: &Integration,
        delivery: Delivery,
        now: DateTime<Utc>,
    ) -> Result<Recorded<Message>, ApiError> {
        let deadline = std::time::Instant::now() + self.media.apis.download_budget;
        let delivered =
            messages::deliver(store, &self.media, integration, &delivery, now, deadline).await?;
        let mut recorded = Recorded {
            events: delivered.messages,
            batch: delivered.batch,
            stored_more: delivered.applied > 0,
            review_more: !delivered.rejected.is_empty(),
        };
        if recorded.events.is_empty() {
            tracing::Span::current().record("event_key", delivered.key.as_str());
        }
        recorded.stored_more |= recorded.review_more;
        Ok(recorded)
    }

    /// WhatsApp's subscription check: `hub.mode=subscribe` and the integration's verify token
    /// answer `hub.challenge`; anything else is 403.
    fn handshake(
        &self,
        integration: &Integration,
        req: &lambda_http::Request,
    ) -> Result<String, ApiError> {
        let Some(MessageSettings::Whatsapp { verify_token, .. }) = Self::settings(integration)
        else {
            return Err(ApiError::method_not_allowed(&["POST"]));
        };
        let forbidden = || ApiError::new(403, "forbidden", "the verify token does not match");
        let token = query(req, "hub.verify_token").ok_or_else(forbidden)?;
        let matches: bool = token
            .as_bytes()
            .ct_eq(verify_token.expose_secret().as_bytes())
            .into();
        if query(req, "hub.mode").as_deref() != Some("subscribe") || !matches {
            return Err(forbidden());
        }
        let challenge = query(req, "hub.challenge")
            .filter(|c| (1..=256).contains(&c.len()) && c.bytes().all(|b| b.is_ascii_graphic()))
            .ok_or_else(|| {
                ApiError::bad_request(
                    "invalid_challenge",
                    "hub.challenge must be 1 to 256 visible characters",
                )
            })?;
        Ok(challenge)
    }
}
