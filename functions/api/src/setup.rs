//! Organisations, integrations and team members.

use crate::Ctx;
use firmspace::calls::providers::{webhook_url, CallProvider, CallSettings};
use firmspace::commands::{Command, RequestKey, Rotation};
use firmspace::effects::outbound::OutboundTarget;
use firmspace::effects::targets;
use firmspace::fields::{self, NAME_MAX, PUBLIC_KEY_MAX, REF_MAX, SECRET_MAX, URL_MAX};
use firmspace::http::{body_bytes, json_response, parse_json, ApiError};
use firmspace::ids::IntegrationId;
use firmspace::integrations::leads::{LeadProvider, LeadSettings};
use firmspace::integrations::rotation::{self, SecretsState};
use firmspace::integrations::{self, Integration, IntegrationKind, Settings};
use firmspace::ledger::providers::{SmsProvider, SmsSettings};
use firmspace::orgs::{self, Member};
use firmspace::payments::providers::monobank::Merchant;
use firmspace::payments::providers::{PaymentSettings, Provider};
use firmspace::signature::{monobank, standard};
use firmspace::store::item::parse_tag;
use firmspace::store::Store;
use lambda_http::{Body, Request, Response};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::json;
use utoipa::ToSchema;

#[derive(Deserialize, ToSchema)]
pub struct NewOrg {
    name: String,
}

pub async fn create_org(
    store: &Store,
    req: &Request,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Response<Body>, ApiError> {
    let body: NewOrg = parse_json(body_bytes(req))?;
    let name = fields::line("name", &body.name, NAME_MAX)?;
    let (org, key) = orgs::create_org(store, name, now).await?;
    Ok(json_response(
        201,
        &json!({"org_id": org.as_str(), "name": name, "api_key": key.expose_secret()}),
    ))
}

/// `payments` takes `provider` (and `secret`, or monobank's `public_key` and `token`);
/// `outbound` takes `url` and `status_url`.
#[derive(Deserialize, ToSchema)]
pub struct NewIntegration {
    #[schema(value_type = firmspace::integrations::IntegrationKind)]
    kind: IntegrationKind,
    /// payments: `standard`, `stripe` or `monobank`; calls: `twilio` or `standard`; messages:
    /// `telegram`, `whatsapp` or `standard`; sms and leads: `standard`.
    pub(crate) provider: Option<String>,
    /// `whsec_...`; generated when absent.
    secret: Option<String>,
    /// monobank: the merchant's key, base64 PEM.
    public_key: Option<String>,
    /// https to a public host.
    url: Option<String>,
    /// `https://.../status/{key}`: 2xx delivered, 404 not delivered.
    status_url: Option<String>,
    /// outbound: a port other than 443 and 80 that `url` and `status_url` use (named on
    /// purpose; any other port is refused).
    port: Option<u16>,
    /// monobank X-Token: payments, to fetch a rotated key; bank, the personal API's token.
    pub(crate) token: Option<String>,
    /// calls, Twilio: the account's auth token, which signs every callback.
    auth_token: Option<String>,
    /// messages, Telegram: the bot's token (reads files, sends replies).
    pub(crate) bot_token: Option<String>,
    /// messages, WhatsApp: the app secret, which signs every delivery.
    pub(crate) app_secret: Option<String>,
    /// messages, WhatsApp: the access token (reads media, sends replies).
    pub(crate) access_token: Option<String>,
    /// messages (Telegram, WhatsApp) and bank (monobank): another API base URL; local and test
    /// stages only.
    pub(crate) api_url: Option<String>,
    /// bank, monobank: the statement's account (`0`, the default, when absent).
    pub(crate) account: Option<String>,
    /// bank, csv: what the file import is called.
    pub(crate) name: Option<String>,
}

/// Every text of a new integration within its limit, before anything else is looked at.
fn check_lengths(body: &NewIntegration) -> Result<(), ApiError> {
    let checks: [(&'static str, &Option<String>, usize); 11] = [
        ("account", &body.account, REF_MAX),
        ("bot_token", &body.bot_token, SECRET_MAX),
        ("app_secret", &body.app_secret, SECRET_MAX),
        ("access_token", &body.access_token, SECRET_MAX),
        ("api_url", &body.api_url, URL_MAX),
        ("secret", &body.secret, SECRET_MAX),
        ("token", &body.token, SECRET_MAX),
        ("auth_token", &body.auth_token, SECRET_MAX),
        ("public_key", &body.public_key, PUBLIC_KEY_MAX),
        ("url", &body.url, URL_MAX),
        ("status_url", &body.status_url, URL_MAX),
    ];
    for (field, value, max) in checks {
        if let Some(value) = value {
            fields::secret(field, value, max)?;
        }
    }
    Ok(())
}

fn payment_settings(body: &NewIntegration) -> Result<PaymentSettings, ApiError> {
    let provider = body
        .provider
        .as_deref()
        .and_then(parse_tag::<Provider>)
        .ok_or_else(|| {
            ApiError::bad_request(
                "invalid_provider",
                "provider must be standard, stripe or monobank",
            )
        })?;
    let secret = || {
        let secret = body
            .secret
            .clone()
            .unwrap_or_else(standard::generate_secret);
        let usable = match provider {
            Provider::Standard => standard::Verifier::new(&secret).is_ok(),
            _ => secret.len() >= 16,
        };
        if !secret.starts_with("whsec_") || !usable {
            return Err(ApiError::bad_request(
                "invalid_secret",
                "secret must be whsec_ followed by the base64 of 24 to 64 bytes (standard) or whsec_ and at least 10 more characters (stripe)",
            ));
        }
        Ok(SecretString::from(secret))
    };
    Ok(match provider {
        Provider::Standard => PaymentSettings::Standard { secret: secret()? },
        Provider::Stripe => PaymentSettings::Stripe { secret: secret()? },
        Provider::Monobank => {
            let key = body.public_key.clone().ok_or_else(|| {
                ApiError::bad_request(
                    "missing_public_key",
                    "monobank needs public_key (base64 PEM from /api/merchant/pubkey)",
                )
            })?;
            monobank::Verifier::new(&key).map_err(|_| {
                ApiError::bad_request(
                    "invalid_public_key",
                    "public_key is not a base64 PEM P-256 key",
                )
            })?;
            PaymentSettings::Monobank(Merchant {
                public_key: key,
                token: body.token.clone().map(SecretString::from),
                key_fetched_at: None,
            })
        }
    })
}

fn outbound_target(
    body: &NewIntegration,
    allow_loopback: bool,
) -> Result<OutboundTarget, ApiError> {
    let url = body
        .url
        .clone()
        .ok_or_else(|| ApiError::bad_request("missing_url", "outbound integrations need url"))?;
    check_outbound_url(&url, allow_loopback, body.port)?;
    if let Some(status_url) = &body.status_url {
        check_outbound_url(status_url, allow_loopback, body.port)?;
    }
    Ok(OutboundTarget {
        url,
        status_url: body.status_url.clone(),
        secret: SecretString::from(standard::generate_secret()),
        port: body.port,
    })
}

/// Where a provider posts, how it signs, and the secret it signs with (shown once, at creation).
fn webhook(
    url: String,
    provider: impl serde::Serialize,
    signature: &str,
    secret: Option<&SecretString>,
) -> serde_json::Value {
    json!({
        "webhook_url": url,
        "provider": provider,
        "signature": signature,
        "secret": secret.map(|s| s.expose_secret()),
    })
}

const STANDARD_SIGNATURE: &str =
    "webhook-id, webhook-timestamp (5-minute window), webhook-signature (v1 HMAC-SHA256)";

/// What the answer tells the integrator about an integration.
fn describe(integration: &Integration, public_url: &str) -> serde_json::Value {
    let (id, hook) = (&integration.id.id, &integration.id);
    let mut answer = match &integration.settings {
        Settings::Payments(p) => {
            let (secret, signature) = match p {
                PaymentSettings::Standard { secret } => (Some(secret), STANDARD_SIGNATURE),
                PaymentSettings::Stripe { secret } => {
                    (Some(secret), "Stripe-Signature (t=..., v1=HMAC-SHA256)")
                }
                PaymentSettings::Monobank(_) => (None, "X-Sign (ECDSA P-256 over the raw body)"),
            };
            let url = format!("{public_url}/hooks/{id}/payments");
            webhook(url, p.provider(), signature, secret)
        }
        Settings::Calls(c) => {
            let (secret, signature) = match c {
                CallSettings::Twilio { .. } => (
                    None,
                    "X-Twilio-Signature (HMAC-SHA1 of this URL and the sorted parameters)",
                ),
                CallSettings::Standard { secret } => (Some(secret), STANDARD_SIGNATURE),
            };
            webhook(webhook_url(public_url, hook), c.provider(), signature, secret)
        }
        Settings::Messages(m) => crate::messages::describe(integration, m, public_url),
        Settings::Sms(SmsSettings::Standard { secret }) => webhook(
            firmspace::ledger::providers::webhook_url(public_url, hook),
            SmsProvider::Standard,
            "webhook-id (the event id), webhook-timestamp (5-minute window), webhook-signature (v1 HMAC-SHA256)",
            Some(secret),
        ),
        Settings::Leads(LeadSettings::Standard { secret }) => webhook(
            firmspace::integrations::leads::webhook_url(public_url, hook),
            LeadProvider::Standard,
            STANDARD_SIGNATURE,
            Some(secret),
        ),
        Settings::Bank(b) => crate::bank::describe(integration, b, public_url),
        Settings::Outbound(o) => json!({
            "url": o.url,
            "status_url": o.status_url,
            "signature": "outgoing calls carry Idempotency-Key and Standard Webhooks signature headers",
            "secret": o.secret.expose_secret(),
        }),
    };
    answer["integration_id"] = json!(id);
    answer["kind"] = json!(integration.kind());
    answer
}

pub async fn create_integration(
    store: &Store,
    settings: &crate::Settings,
    ctx: &Ctx<'_>,
) -> Result<Response<Body>, ApiError> {
    let body: NewIntegration = parse_json(body_bytes(ctx.req))?;
    check_lengths(&body)?;
    let integration = Integration {
        id: IntegrationId::generate(&ctx.org),
        settings: match body.kind {
            IntegrationKind::Payments => Settings::Payments(payment_settings(&body)?),
            IntegrationKind::Outbound => {
                Settings::Outbound(outbound_target(&body, settings.allows_loopback)?)
            }
            IntegrationKind::Calls => Settings::Calls(call_settings(&body)?),
            IntegrationKind::Messages => {
                Settings::Messages(crate::messages::settings(&body, settings.allows_loopback)?)
            }
            IntegrationKind::Bank => {
                Settings::Bank(crate::bank::settings(&body, settings.allows_loopback).await?)
            }
            IntegrationKind::Sms => Settings::Sms(sms_settings(&body)?),
            IntegrationKind::Leads => Settings::Leads(lead_settings(&body)?),
        },
        created_at: ctx.now,
    };
    integrations::create_by(store, &integration, &ctx.key.id).await?;
    Ok(json_response(
        201,
        &describe(&integration, &settings.public_url),
    ))
}

/// A `whsec_` secret as given (base64 of 24 to 64 bytes), or a new one.
fn standard_secret(body: &NewIntegration) -> Result<SecretString, ApiError> {
    let secret = body
        .secret
        .clone()
        .unwrap_or_else(standard::generate_secret);
    if !secret.starts_with("whsec_") || standard::Verifier::new(&secret).is_err() {
        return Err(ApiError::bad_request(
            "invalid_secret",
            "secret must be whsec_ followed by the base64 of 24 to 64 bytes",
        ));
    }
    Ok(SecretString::from(secret))
}

/// An SMS carrier: `standard` (our own contract), signed with a `whsec_` secret.
fn sms_settings(body: &NewIntegration) -> Result<SmsSettings, ApiError> {
    match body.provider.as_deref().and_then(parse_tag::<SmsProvider>) {
        Some(SmsProvider::Standard) => Ok(SmsSettings::Standard {
            secret: standard_secret(body)?,
        }),
        None => Err(ApiError::bad_request(
            "invalid_provider",
            "an sms integration's provider is standard",
        )),
    }
}

/// A lead form: `standard` (our own contract), signed with a `whsec_` secret.
fn lead_settings(body: &NewIntegration) -> Result<LeadSettings, ApiError> {
    match body.provider.as_deref().and_then(parse_tag::<LeadProvider>) {
        Some(LeadProvider::Standard) => Ok(LeadSettings::Standard {
            secret: standard_secret(body)?,
        }),
        None => Err(ApiError::bad_request(
            "invalid_provider",
            "a leads integration's provider is standard",
        )),
    }
}

/// `twilio` with the account's `auth_token`, or `standard` with a `whsec_` secret (generated
/// when absent).
fn call_settings(body: &NewIntegration) -> Result<CallSettings, ApiError> {
    match body.provider.as_deref().and_then(parse_tag::<CallProvider>) {
        Some(CallProvider::Twilio) => {
            let token = body.auth_token.clone().ok_or_else(|| {
                ApiError::bad_request(
                    "missing_auth_token",
                    "twilio needs the account's auth_token",
                )
            })?;
            Ok(CallSettings::Twilio {
                auth_token: SecretString::from(token),
            })
        }
        Some(CallProvider::Standard) => Ok(CallSettings::Standard {
            secret: standard_secret(body)?,
        }),
        None => Err(ApiError::bad_request(
            "invalid_provider",
            "a calls integration's provider is twilio or standard",
        )),
    }
}

/// An integration's own `api_url` (a loopback stand-in for a provider's API): taken only where the
/// stage allows loopback, refused elsewhere.
pub(crate) fn stand_in_url(
    body: &NewIntegration,
    allows_loopback: bool,
) -> Result<Option<String>, ApiError> {
    match &body.api_url {
        Some(url) if allows_loopback => {
            check_outbound_url(url, true, None)?;
            Ok(Some(url.clone()))
        }
        Some(_) => Err(ApiError::bad_request(
            "invalid_url",
            "api_url is taken on the local and test stages only",
        )),
        None => Ok(None),
    }
}

/// An outbound URL must be https to a public host on port 443 or 80 (or the `port` the
/// integration names); loopback http only where the stage allows it.
fn check_outbound_url(raw: &str, allow_loopback: bool, port: Option<u16>) -> Result<(), ApiError> {
    targets::check_url_on(raw, allow_loopback, port)
        .map_err(|why| ApiError::bad_request("invalid_url", why))
}

/// The organisation's integration `raw` read with its secrets left sealed, or 404.
async fn sealed_integration(
    store: &Store,
    ctx: &Ctx<'_>,
    raw: &str,
) -> Result<(Integration, firmspace::store::Item), ApiError> {
    let id = IntegrationId::parse(raw)
        .ok()
        .filter(|id| id.org == ctx.org)
        .ok_or_else(|| ApiError::not_found("integration"))?;
    rotation::sealed(store, &id)
        .await?
        .ok_or_else(|| ApiError::not_found("integration"))
}

/// `GET /api/integrations/{id}`: what it is and which secrets it holds, never their values.
pub async fn read_integration(
    store: &Store,
    ctx: &Ctx<'_>,
    raw: &str,
) -> Result<Response<Body>, ApiError> {
    let (integration, item) = sealed_integration(store, ctx, raw).await?;
    Ok(json_response(
        200,
        &json!({
            "integration_id": integration.id.id,
            "kind": integration.kind(),
            "provider": firmspace::store::item::Read::opt_str(&item, "provider"),
            "created_at": firmspace::time::format(integration.created_at),
            "created_by": firmspace::store::item::Read::opt_str(&item, "created_by"),
            "secrets": SecretsState::of(&integration, &item, ctx.now),
        }),
    ))
}

/// `POST /api/integrations/{id}/secrets`: every secret the integration holds, by name, and how
/// long the previous ones still verify (`overlap_hours`, 0 to 168, default 24).
#[derive(Deserialize, ToSchema)]
pub struct NewSecrets {
    /// The new values by the names the integration lists (`GET /api/integrations/{id}`:
    /// `secrets.names`), each 1 to 256 visible ASCII characters; a Standard Webhooks `secret` is
    /// `whsec_` and the base64 of 24 to 64 bytes.
    #[schema(value_type = Object)]
    secrets: std::collections::BTreeMap<String, String>,
    overlap_hours: Option<u32>,
}

/// The longest overlap, in hours (`rotation::MAX_OVERLAP`).
const OVERLAP_HOURS_MAX: u32 = 168;

/// Rotates an integration's secrets once per `Idempotency-Key`: the same key again gets the
/// stored answer (which names the secrets, never their values).
pub async fn rotate_secrets(
    store: &Store,
    ctx: &Ctx<'_>,
    raw: &str,
) -> Result<Response<Body>, ApiError> {
    let key = firmspace::ops::requests::key_of(ctx.req)?;
    let body: NewSecrets = parse_json(body_bytes(ctx.req))?;
    let overlap = match body.overlap_hours {
        None => rotation::DEFAULT_OVERLAP,
        Some(h) if h <= OVERLAP_HOURS_MAX => chrono::Duration::hours(h.into()),
        Some(_) => {
            return Err(ApiError {
                field: Some("overlap_hours"),
                ..ApiError::bad_request("invalid_field", "overlap_hours is 0 to 168")
            })
        }
    };
    let (integration, _) = sealed_integration(store, ctx, raw).await?;
    let mut secrets = std::collections::HashMap::new();
    for (name, value) in &body.secrets {
        fields::secret("secrets", value, SECRET_MAX)?;
        rotated_secret_usable(&integration.settings, name, value)?;
        secrets.insert(name.clone(), SecretString::from(value.clone()));
    }
    let command = Command::RotateSecrets {
        id: integration.id,
        rotation: Rotation { secrets, overlap },
    };
    let done = ctx.perform(store, RequestKey::Header(key), command).await?;
    Ok(json_response(done.status, &done.answer))
}

/// A new value for a Standard Webhooks or Stripe signing `secret` must be usable as one, as at
/// creation; other secrets are the provider's tokens, taken as given.
fn rotated_secret_usable(settings: &Settings, name: &str, value: &str) -> Result<(), ApiError> {
    let stripe = matches!(settings, Settings::Payments(PaymentSettings::Stripe { .. }));
    let standard = name == "secret" && !stripe;
    let usable = match (stripe, standard) {
        (true, _) => value.starts_with("whsec_") && value.len() >= 16,
        (false, true) => value.starts_with("whsec_") && standard::Verifier::new(value).is_ok(),
        (false, false) => true,
    };
    if usable {
        Ok(())
    } else {
        Err(ApiError::bad_request(
            "invalid_secret",
            "secret must be whsec_ followed by the base64 of 24 to 64 bytes (standard) or whsec_ and at least 10 more characters (stripe)",
        ))
    }
}

#[derive(Deserialize, ToSchema)]
pub struct NewMember {
    user_id: String,
    name: String,
}

pub async fn add_member(store: &Store, ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let body: NewMember = parse_json(body_bytes(ctx.req))?;
    firmspace::ids::LocalId::parse("user_id", &body.user_id)
        .map_err(|e| ApiError::bad_request("invalid_user_id", e.to_string()))?;
    let member = Member {
        user_id: body.user_id,
        name: fields::line("name", &body.name, NAME_MAX)?.to_owned(),
    };
    let added = orgs::add_member(store, &ctx.org, &member, ctx.now).await?;
    Ok(json_response(
        if added { 201 } else { 200 },
        &json!({"user_id": member.user_id, "name": member.name, "duplicate": !added}),
    ))
}

pub async fn list_members(store: &Store, ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let members = orgs::members(store, &ctx.org).await?;
    let items: Vec<_> = members
        .iter()
        .map(|m| json!({"user_id": m.user_id, "name": m.name}))
        .collect();
    Ok(json_response(200, &json!({ "items": items })))
}
