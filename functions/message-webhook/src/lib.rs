#![forbid(unsafe_code)]
//! `POST /hooks/{integration_id}/messages` (and `GET` for WhatsApp's subscription handshake):
//! customers' messages on the shared edge. This crate is only what is particular to messages: a
//! verifier per messenger (Telegram's secret token, WhatsApp's `X-Hub-Signature-256`, Standard
//! Webhooks), a parser per messenger, and `messages::record` for each message of a delivery.
//! WhatsApp deliveries are answered in the batch form; the others with one message.

use anyhow::Context;
use chrono::{DateTime, Utc};
use firmspace::config::{self, Config};
use firmspace::http::{query, ApiError};
use firmspace::integrations::{Integration, IntegrationKind, Settings};
use firmspace::messages::media::{Apis, Files, Media};
use firmspace::messages::providers::{MessageProvider, MessageSettings};
use firmspace::messages::{self, Incoming, Posted, StatusEvent, BATCH_MAX};
use firmspace::review::ReviewItem;
use firmspace::signature::{self, AnyVerifier, SignatureError, Verified};
use firmspace::store::Store;
use firmspace::webhook::{Edge, Outcome, Parsed, Recorded, Source};
use secrecy::ExposeSecret;
use serde_json::{json, Value};
use subtle::ConstantTimeEq;

/// The message webhook: the shared edge over the messages source.
pub type App = Edge<Messages>;

pub fn app(store: Store, media: Media) -> App {
    Edge::new(Messages { media }, store)
}

/// `ATTACHMENTS_BUCKET` holds attachments; `TELEGRAM_API_URL`, `WHATSAPP_API_URL` and
/// `CHANNEL_TIMEOUT_MS` set the messengers' APIs (see `Apis::from_env`).
pub async fn from_env() -> anyhow::Result<App> {
    let config = Config::from_env().context("loading configuration")?;
    let bucket = config::require("ATTACHMENTS_BUCKET").context("loading configuration")?;
    let apis = Apis::from_env(config.allows_loopback()).context("loading configuration")?;
    let sdk = firmspace::aws::sdk_config(config.endpoint_url.as_deref()).await;
    let s3 = firmspace::aws::s3(&sdk, config.endpoint_url.is_some());
    Ok(app(
        config.store().await,
        Media::new(apis, Files::new(s3, bucket)),
    ))
}

pub struct Messages {
    media: Media,
}

/// A message of a batch that breaks a limit: a review item with what it said, and its line in
/// the answer.
async fn unparseable(
    store: &Store,
    integration: &Integration,
    incoming: &Incoming,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<Value, ApiError> {
    let digest = firmspace::ids::ExternalId::of_body(incoming.provider_id.as_bytes());
    let text: String = incoming.text.chars().take(messages::TEXT_MAX).collect();
    ReviewItem {
        org: integration.org().clone(),
        kind: "message".into(),
        reason: "unparseable_message".into(),
        key: format!("{}:{digest}", integration.id.id),
        at: now,
        detail: json!({
            "integration_id": integration.id.id, "reason": reason,
            "message_id": incoming.provider_id.chars().take(300).collect::<String>(),
            "chat_id": incoming.chat_id.chars().take(300).collect::<String>(),
            "from": {"id": incoming.from.identity.chars().take(300).collect::<String>(), "name": incoming.from.name.chars().take(300).collect::<String>()},
            "text": text,
        }),
    }
    .put(store)
    .await?;
    Ok(
        json!({"message_id": incoming.provider_id, "status": "unparseable", "review": "unparseable_message", "detail": reason}),
    )
}

/// A verified delivery: its messages and status events, and (in a batch) the messages beside
/// them that break a limit, each kept for a person while the others are stored.
pub struct Delivery {
    messages: Vec<Incoming>,
    statuses: Vec<StatusEvent>,
    rejected: Vec<(Incoming, String)>,
    batch: bool,
}

fn settings(integration: &Integration) -> Option<&MessageSettings> {
    match &integration.settings {
        Settings::Messages(m) => Some(m),
        _ => None,
    }
}

impl Source for Messages {
    const KIND: IntegrationKind = IntegrationKind::Messages;
    const HANDSHAKE: bool = true;
    type Verifier = AnyVerifier;
    type Event = Delivery;

    fn verifier(&self, integration: &Integration) -> Result<AnyVerifier, SignatureError> {
        Ok(match settings(integration).ok_or(SignatureError::BadKey)? {
            MessageSettings::Telegram { secret_token, .. } => Box::new(
                signature::telegram::Verifier::new(secret_token.expose_secret())?,
            ),
            MessageSettings::Whatsapp { app_secret, .. } => Box::new(
                signature::whatsapp::Verifier::new(app_secret.expose_secret())?,
            ),
            MessageSettings::Standard { secret } => {
                Box::new(signature::standard::Verifier::new(secret.expose_secret())?)
            }
        })
    }

    fn label(&self, integration: &Integration) -> &'static str {
        match settings(integration).map(MessageSettings::provider) {
            Some(MessageProvider::Telegram) => "telegram",
            Some(MessageProvider::Whatsapp) => "whatsapp",
            Some(MessageProvider::Standard) => "standard",
            Some(MessageProvider::Sms) | None => "messages",
        }
    }

    fn parse(
        &self,
        integration: &Integration,
        _verified: &Verified,
        body: &[u8],
        _now: DateTime<Utc>,
    ) -> Result<Parsed<Delivery>, String> {
        let posted = match settings(integration).map(MessageSettings::provider) {
            Some(MessageProvider::Telegram) => messages::telegram(body)?,
            Some(MessageProvider::Whatsapp) => messages::whatsapp(body)?,
            Some(MessageProvider::Standard) => messages::standard(body)?,
            Some(MessageProvider::Sms) | None => return Err("not a messages integration".into()),
        };
        let (messages, statuses, batch) = match posted {
            Posted::Ignored(kind) => return Ok(Parsed::Ignored(kind)),
            Posted::Delivery {
                messages,
                statuses,
                batch,
            } => (messages, statuses, batch),
        };
        if messages.len() + statuses.len() > BATCH_MAX {
            return Err(format!(
                "more than {BATCH_MAX} messages and statuses in one delivery"
            ));
        }
        let (mut good, mut rejected) = (Vec::new(), Vec::new());
        for m in messages.into_iter().map(Incoming::printable) {
            match m.check() {
                Ok(()) => good.push(m),
                // One message alone: the whole body is kept raw for a person (the edge's
                // unparseable path).
                Err(reason) if !batch => return Err(reason),
                Err(reason) => rejected.push((m, reason)),
            }
        }
        if good.is_empty() && statuses.is_empty() {
            if let Some((_, reason)) = rejected.first() {
                return Err(reason.clone());
            }
        }
        Ok(Parsed::Event(Delivery {
            messages: good,
            statuses,
            rejected,
            batch,
        }))
    }

    async fn record(
        &self,
        store: &Store,
        integration: &Integration,
        delivery: Delivery,
        now: DateTime<Utc>,
    ) -> Result<Recorded, ApiError> {
        let mut answers = Vec::with_capacity(delivery.messages.len());
        let mut keys = Vec::new();
        let mut stored_any = false;
        // Every download of this delivery together stays inside the budget, so each message is
        // written before the function's own timeout.
        let deadline = std::time::Instant::now() + self.media.apis.download_budget;
        for incoming in &delivery.messages {
            let recorded =
                messages::record(store, &self.media, integration, incoming, now, deadline).await?;
            let message = recorded.message();
            stored_any |= recorded.is_new();
            keys.push(message.key());
            answers.push(json!({
                "message_id": message.provider_id,
                "key": message.key(),
                "duplicate": !recorded.is_new(),
                "conversation_id": message.conversation_id,
            }));
        }
        for (incoming, reason) in &delivery.rejected {
            answers.push(unparseable(store, integration, incoming, reason, now).await?);
        }
        let mut applied = 0usize;
        for status in &delivery.statuses {
            if messages::apply_status(store, integration.org(), &integration.id.id, status, now)
                .await?
            {
                applied += 1;
            }
        }
        tracing::info!(
            messages = answers.len(),
            statuses = delivery.statuses.len(),
            applied,
            "delivery recorded"
        );
        let answer: Value = match (delivery.batch, answers.first()) {
            (false, Some(one)) => one.clone(),
            _ => {
                json!({"messages": answers, "statuses": delivery.statuses.len(), "statuses_applied": applied})
            }
        };
        // A mismatching copy has its `payload_mismatch` review item from `messages::record`
        // already: for the edge it is a duplicate.
        let review = !delivery.rejected.is_empty();
        let outcome = if stored_any || applied > 0 || review {
            Outcome::Stored { review }
        } else {
            Outcome::Duplicate
        };
        let key = keys.into_iter().next().unwrap_or_else(|| {
            let first = delivery
                .statuses
                .first()
                .map_or("", |s| s.provider_id.as_str());
            firmspace::ids::EventKey::new("status", &format!("{}:{first}", integration.id.id))
        });
        Ok(Recorded {
            key,
            answer,
            outcome,
        })
    }

    /// WhatsApp's subscription check: `hub.mode=subscribe` and the integration's verify token
    /// answer `hub.challenge`; anything else is 403.
    fn handshake(
        &self,
        integration: &Integration,
        req: &lambda_http::Request,
    ) -> Result<String, ApiError> {
        let Some(MessageSettings::Whatsapp { verify_token, .. }) = settings(integration) else {
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
