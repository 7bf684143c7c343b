//! A messenger integration's settings and what its integrator is told.

use super::NewIntegration;
use crate::commands::answers::IntegrationCreated;
use crate::commands::Refused;
use crate::fields::{self, SECRET_MAX};
use crate::integrations::Integration;
use crate::messages::providers::{webhook_url, MessageProvider, MessageSettings};
use crate::signature::{standard, telegram};
use crate::store::item::parse_tag;
use secrecy::{ExposeSecret, SecretString};
use serde_json::json;

/// A messenger's settings from the fields of `POST /api/integrations`: Telegram with its
/// `bot_token`, WhatsApp with `app_secret` and `access_token`, or the generic sender; the
/// tokens Telegram and Meta are told (`secret_token`, `verify_token`) and the generic secret are
/// generated. `api_url` only where the stage allows a loopback stand-in.
pub fn settings(body: &NewIntegration, allows_loopback: bool) -> Result<MessageSettings, Refused> {
    let need = |value: &Option<String>, field: &'static str, provider: &str| {
        let value = value.as_deref().ok_or_else(|| {
            Refused::invalid("missing_field", format!("{provider} needs {field}"))
        })?;
        Ok::<_, Refused>(SecretString::from(
            fields::secret(field, value, SECRET_MAX)?.to_owned(),
        ))
    };
    let api_url = super::stand_in_url(body, allows_loopback)?;
    match body
        .provider
        .as_deref()
        .and_then(parse_tag::<MessageProvider>)
    {
        Some(MessageProvider::Telegram) => Ok(MessageSettings::Telegram {
            bot_token: need(&body.bot_token, "bot_token", "telegram")?,
            secret_token: SecretString::from(telegram::generate_token()),
            api_url,
        }),
        Some(MessageProvider::Whatsapp) => Ok(MessageSettings::Whatsapp {
            app_secret: need(&body.app_secret, "app_secret", "whatsapp")?,
            access_token: need(&body.access_token, "access_token", "whatsapp")?,
            verify_token: SecretString::from(telegram::generate_token()),
            api_url,
        }),
        Some(MessageProvider::Standard) if api_url.is_some() => Err(Refused::invalid(
            "invalid_url",
            "the generic channel has no API to point elsewhere",
        )),
        Some(MessageProvider::Standard) => Ok(MessageSettings::Standard {
            secret: SecretString::from(standard::generate_secret()),
        }),
        Some(MessageProvider::Sms) | None => Err(Refused::invalid(
            "invalid_provider",
            "a messages integration's provider is telegram, whatsapp or standard",
        )),
    }
}

/// What the integrator is told: where to point the messenger, and the token it sends back.
pub fn describe(
    integration: &Integration,
    m: &MessageSettings,
    public_url: &str,
) -> IntegrationCreated {
    let out = IntegrationCreated {
        webhook_url: Some(webhook_url(public_url, &integration.id)),
        provider: Some(json!(m.provider())),
        ..IntegrationCreated::default()
    };
    let shown = |s: &SecretString| Some(s.expose_secret().to_owned());
    let said = |s: &str| Some(s.to_owned());
    match m {
        MessageSettings::Telegram { secret_token, .. } => IntegrationCreated {
            secret_token: shown(secret_token),
            signature: said(
                "X-Telegram-Bot-Api-Secret-Token (set it with setWebhook's secret_token)",
            ),
            ..out
        },
        MessageSettings::Whatsapp { verify_token, .. } => IntegrationCreated {
            verify_token: shown(verify_token),
            signature: said("X-Hub-Signature-256 (HMAC-SHA256 of the body with the app secret)"),
            ..out
        },
        MessageSettings::Standard { secret } => IntegrationCreated {
            secret: Some(json!(secret.expose_secret())),
            signature: said("webhook-id, webhook-timestamp, webhook-signature (v1 HMAC-SHA256)"),
            ..out
        },
    }
}
