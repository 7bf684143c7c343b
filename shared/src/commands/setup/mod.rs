//! `POST /api/integrations` as a command: a new integration's settings read from its fields
//! (each provider's secrets checked or generated, sealed when stored), recorded with who made
//! it, and described to the integrator once (where the provider posts, how it signs).

mod bank;
mod channels;

use super::answers::IntegrationCreated;
use super::{Actor, Env};
use crate::calls::providers::{webhook_url, CallProvider, CallSettings};
use crate::commands::{Command, Once, Ran, Replies, RequestKey};
use crate::commands::{Made, Refused};
use crate::effects::outbound::OutboundTarget;
use crate::effects::targets;
use crate::fields::{self, PUBLIC_KEY_MAX, REF_MAX, SECRET_MAX, URL_MAX};
use crate::ids::IntegrationId;
use crate::integrations::bank::BankSettings;
use crate::integrations::leads::{LeadProvider, LeadSettings};
use crate::integrations::{self, Integration, IntegrationKind, Settings};
use crate::ledger::providers::{SmsProvider, SmsSettings};
use crate::orgs::Scope;
use crate::payments::providers::monobank::Merchant;
use crate::payments::providers::{PaymentSettings, Provider};
use crate::signature::{monobank, standard};
use crate::store::item::parse_tag;
use crate::store::CapError;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::json;
use utoipa::ToSchema;

/// What the api's deployment tells integrators and allows: the public base URL webhook URLs
/// are built on, and whether loopback stand-ins of providers' APIs are taken (local and test
/// stages only).
#[derive(Clone, Debug)]
pub struct Site {
    pub public_url: String,
    pub allows_loopback: bool,
    /// The models a rule's AI step may name (`AI_MODELS`).
    pub models: super::model::Models,
    /// The most members an organisation holds (`MEMBERS_MAX`, default 1,000).
    pub members_max: u64,
    /// The most monobank bank integrations an organisation holds (`BANK_IMPORTS_MAX`, 20).
    pub bank_imports_max: u64,
}

impl Site {
    /// The site as the stage sets it; `MEMBERS_MAX` read from the environment.
    pub fn new(public_url: &str, allows_loopback: bool, models: super::model::Models) -> Self {
        Self {
            public_url: public_url.to_owned(),
            allows_loopback,
            models,
            members_max: crate::config::parse_var("MEMBERS_MAX", crate::orgs::MEMBERS_MAX)
                .unwrap_or(crate::orgs::MEMBERS_MAX),
            bank_imports_max: crate::config::parse_var(
                "BANK_IMPORTS_MAX",
                integrations::BANK_IMPORTS_MAX,
            )
            .unwrap_or(integrations::BANK_IMPORTS_MAX),
        }
    }
}

/// A new integration (a provider's webhook, an outbound target, a bank's statement).
#[derive(Debug)]
pub struct CreateIntegration(pub Box<NewIntegration>);

/// Makes the integration `new` asks for, as `by`: 201 and what the integrator is told.
impl Command for CreateIntegration {
    type Answer = IntegrationCreated;
    const NAME: &'static str = "create_integration";
    const REQUIRES: &'static [Scope] = &[Scope::Write];
    const ONCE: Once = Once::Each;

    async fn run<R: Replies>(
        self,
        env: &Env<'_, R>,
        by: &Actor,
        _key: &RequestKey,
    ) -> Ran<IntegrationCreated> {
        let new = &*self.0;
        let site = env.site.ok_or_else(|| Refused::not_found("route"))?;
        check_lengths(new)?;
        let loopback = site.allows_loopback;
        let settings = match new.kind {
            IntegrationKind::Payments => Settings::Payments(payment_settings(new, loopback)?),
            IntegrationKind::Outbound => Settings::Outbound(outbound_target(new, loopback)?),
            IntegrationKind::Calls => Settings::Calls(call_settings(new)?),
            IntegrationKind::Messages => Settings::Messages(channels::settings(new, loopback)?),
            IntegrationKind::Bank => Settings::Bank(bank::settings(new, loopback).await?),
            IntegrationKind::Sms => Settings::Sms(sms_settings(new)?),
            IntegrationKind::Leads => Settings::Leads(lead_settings(new)?),
        };
        let integration = Integration {
            id: IntegrationId::generate(by.org()),
            settings,
            created_at: env.now,
        };
        let who = by.id();
        match &integration.settings {
            Settings::Bank(BankSettings::Monobank { .. }) => {
                let max = site.bank_imports_max;
                let counting = integrations::counting(env.store, &integration, &who, max).await?;
                let refused = |e| {
                    match e {
                    CapError::Store(e) => Refused::from(e),
                    CapError::Full => Refused::conflict("limit_reached",
                        format!("an organisation holds at most {max} monobank bank integrations, paused ones included"),
                    ),
                    // Every row would be stored and matched once per integration: twice.
                    CapError::Taken => Refused::conflict("account_taken",
                        "this token's account has a bank integration of this organisation already",
                    ),
                }
                };
                env.apply(counting, refused).await?;
            }
            _ => {
                let creating = integrations::creating(env.store, &integration, &who).await?;
                env.apply(creating, Refused::from).await?;
            }
        }
        Ok((Made::Created, describe(&integration, &site.public_url)))
    }
}

/// `payments` takes `provider` (and `secret`, or monobank's `public_key` and `token`);
/// `outbound` takes `url` and `status_url`.
#[derive(Deserialize, ToSchema)]
pub struct NewIntegration {
    #[schema(value_type = crate::integrations::IntegrationKind)]
    pub kind: IntegrationKind,
    /// payments: `standard`, `stripe` or `monobank`; calls: `twilio` or `standard`; messages:
    /// `telegram`, `whatsapp` or `standard`; sms and leads: `standard`.
    pub provider: Option<String>,
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
    pub token: Option<String>,
    /// calls, Twilio: the account's auth token, which signs every callback.
    auth_token: Option<String>,
    /// messages, Telegram: the bot's token (reads files, sends replies).
    pub bot_token: Option<String>,
    /// messages, WhatsApp: the app secret, which signs every delivery.
    pub app_secret: Option<String>,
    /// messages, WhatsApp: the access token (reads media, sends replies).
    pub access_token: Option<String>,
    /// messages (Telegram, WhatsApp), bank (monobank) and payments (Stripe): another API base
    /// URL; local and test stages only (400 elsewhere).
    pub api_url: Option<String>,
    /// payments, Stripe: a restricted API key (`rk_…`) that reads its events list, so what
    /// Stripe sent while we were down can be recovered. Sealed like every secret.
    pub api_key: Option<String>,
    /// bank, monobank: the statement's account (`0`, the default, when absent).
    pub account: Option<String>,
    /// bank, csv: what the file import is called.
    pub name: Option<String>,
}

/// Its kind and provider only: the other fields are secrets.
impl std::fmt::Debug for NewIntegration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewIntegration")
            .field("kind", &self.kind)
            .field("provider", &self.provider)
            .finish_non_exhaustive()
    }
}

/// Every text of a new integration within its limit, before anything else is looked at.
fn check_lengths(body: &NewIntegration) -> Result<(), Refused> {
    let checks: [(&'static str, &Option<String>, usize); 12] = [
        ("account", &body.account, REF_MAX),
        ("api_key", &body.api_key, SECRET_MAX),
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

/// A Stripe API key: a restricted key (`rk_…`), which may read the account's events and
/// nothing else; a full secret key (`sk_…`) would let whoever holds it move the money, so it
/// is refused.
pub fn stripe_key(raw: &str) -> Result<SecretString, Refused> {
    let shaped = raw.starts_with("rk_") && (10..=SECRET_MAX).contains(&raw.len());
    match shaped {
        true => Ok(SecretString::from(raw.to_owned())),
        false => Err(Refused::invalid(
            "invalid_api_key",
            "api_key is a Stripe restricted key (rk_…) that may read events: a secret key (sk_…) is refused",
        )),
    }
}

/// A payments integration's signing secret as given (or generated), usable as its provider's.
fn signing_secret(body: &NewIntegration, provider: Provider) -> Result<SecretString, Refused> {
    let secret = body
        .secret
        .clone()
        .unwrap_or_else(standard::generate_secret);
    let usable = match provider {
        Provider::Standard => standard::Verifier::new(&secret).is_ok(),
        _ => secret.len() >= 16,
    };
    if !secret.starts_with("whsec_") || !usable {
        return Err(Refused::invalid(
            "invalid_secret",
            "secret must be whsec_ followed by the base64 of 24 to 64 bytes (standard) or whsec_ and at least 10 more characters (stripe)",
        ));
    }
    Ok(SecretString::from(secret))
}

fn payment_settings(
    body: &NewIntegration,
    allows_loopback: bool,
) -> Result<PaymentSettings, Refused> {
    let provider = body
        .provider
        .as_deref()
        .and_then(parse_tag::<Provider>)
        .ok_or_else(|| {
            Refused::invalid(
                "invalid_provider",
                "provider must be standard, stripe or monobank",
            )
        })?;
    let secret = || signing_secret(body, provider);
    if provider != Provider::Stripe && (body.api_url.is_some() || body.api_key.is_some()) {
        return Err(Refused::invalid(
            "invalid_field",
            "api_url and api_key are a Stripe integration's (its events list)",
        ));
    }
    Ok(match provider {
        Provider::Standard => PaymentSettings::Standard { secret: secret()? },
        Provider::Stripe => {
            let api_key = body.api_key.as_deref().map(stripe_key).transpose()?;
            PaymentSettings::Stripe {
                secret: secret()?,
                live: api_key
                    .as_ref()
                    .is_some_and(crate::integrations::payments::is_live),
                api_key,
                api_url: stand_in_url(body, allows_loopback)?,
            }
        }
        Provider::Monobank => {
            let key = body.public_key.clone().ok_or_else(|| {
                Refused::invalid(
                    "missing_public_key",
                    "monobank needs public_key (base64 PEM from /api/merchant/pubkey)",
                )
            })?;
            monobank::Verifier::new(&key).map_err(|_| {
                Refused::invalid(
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

fn outbound_target(body: &NewIntegration, allow_loopback: bool) -> Result<OutboundTarget, Refused> {
    let url = body
        .url
        .clone()
        .ok_or_else(|| Refused::invalid("missing_url", "outbound integrations need url"))?;
    check_outbound_url(&url, allow_loopback, body.port)?;
    if let Some(status_url) = &body.status_url {
        check_outbound_url(status_url, allow_loopback, body.port)?;
        // One URL for every key would answer for every run alike: a lost send would be "sent".
        if !status_url.contains("{key}") {
            return Err(Refused::field(
                "status_url",
                "invalid_url",
                "status_url names the key it asks about: `{key}` in it is replaced by the run's Idempotency-Key",
            ));
        }
    }
    Ok(OutboundTarget {
        url,
        status_url: body.status_url.clone(),
        secret: SecretString::from(standard::generate_secret()),
        previous: None,
        port: body.port,
    })
}

/// Where a provider posts, how it signs, and the secret it signs with (shown once, at creation).
fn webhook(
    url: String,
    provider: impl serde::Serialize,
    signature: &str,
    secret: Option<&SecretString>,
) -> IntegrationCreated {
    IntegrationCreated {
        webhook_url: Some(url),
        provider: Some(json!(provider)),
        signature: Some(signature.to_owned()),
        secret: Some(json!(secret.map(|s| s.expose_secret()))),
        ..IntegrationCreated::default()
    }
}

const STANDARD_SIGNATURE: &str =
    "webhook-id, webhook-timestamp (5-minute window), webhook-signature (v1 HMAC-SHA256)";

/// What the answer tells the integrator about an integration.
pub fn describe(integration: &Integration, public_url: &str) -> IntegrationCreated {
    let (id, hook) = (&integration.id.id, &integration.id);
    let answer = match &integration.settings {
        Settings::Payments(p) => {
            let (secret, signature) = match p {
                PaymentSettings::Standard { secret } => (Some(secret), STANDARD_SIGNATURE),
                PaymentSettings::Stripe { secret, .. } => {
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
        Settings::Messages(m) => channels::describe(integration, m, public_url),
        Settings::Sms(SmsSettings::Standard { secret }) => webhook(
            crate::ledger::providers::webhook_url(public_url, hook),
            SmsProvider::Standard,
            "webhook-id (the event id), webhook-timestamp (5-minute window), webhook-signature (v1 HMAC-SHA256)",
            Some(secret),
        ),
        Settings::Leads(LeadSettings::Standard { secret }) => webhook(
            crate::integrations::leads::webhook_url(public_url, hook),
            LeadProvider::Standard,
            STANDARD_SIGNATURE,
            Some(secret),
        ),
        Settings::Bank(b) => bank::describe(integration, b, public_url),
        Settings::Outbound(o) => IntegrationCreated {
            url: Some(o.url.clone()),
            status_url: Some(json!(o.status_url)),
            signature: Some(
                "outgoing calls carry Idempotency-Key and Standard Webhooks signature headers"
                    .to_owned(),
            ),
            secret: Some(json!(o.secret.expose_secret())),
            ..IntegrationCreated::default()
        },
    };
    IntegrationCreated {
        integration_id: id.to_string(),
        kind: json!(integration.kind()),
        ..answer
    }
}

/// A `whsec_` secret as given (base64 of 24 to 64 bytes), or a new one.
fn standard_secret(body: &NewIntegration) -> Result<SecretString, Refused> {
    let secret = body
        .secret
        .clone()
        .unwrap_or_else(standard::generate_secret);
    if !secret.starts_with("whsec_") || standard::Verifier::new(&secret).is_err() {
        return Err(Refused::invalid(
            "invalid_secret",
            "secret must be whsec_ followed by the base64 of 24 to 64 bytes",
        ));
    }
    Ok(SecretString::from(secret))
}

/// An SMS carrier: `standard` (our own contract), signed with a `whsec_` secret.
fn sms_settings(body: &NewIntegration) -> Result<SmsSettings, Refused> {
    match body.provider.as_deref().and_then(parse_tag::<SmsProvider>) {
        Some(SmsProvider::Standard) => Ok(SmsSettings::Standard {
            secret: standard_secret(body)?,
        }),
        None => Err(Refused::invalid(
            "invalid_provider",
            "an sms integration's provider is standard",
        )),
    }
}

/// A lead form: `standard` (our own contract), signed with a `whsec_` secret.
fn lead_settings(body: &NewIntegration) -> Result<LeadSettings, Refused> {
    match body.provider.as_deref().and_then(parse_tag::<LeadProvider>) {
        Some(LeadProvider::Standard) => Ok(LeadSettings::Standard {
            secret: standard_secret(body)?,
        }),
        None => Err(Refused::invalid(
            "invalid_provider",
            "a leads integration's provider is standard",
        )),
    }
}

/// `twilio` with the account's `auth_token`, or `standard` with a `whsec_` secret (generated
/// when absent).
fn call_settings(body: &NewIntegration) -> Result<CallSettings, Refused> {
    match body.provider.as_deref().and_then(parse_tag::<CallProvider>) {
        Some(CallProvider::Twilio) => {
            let token = body.auth_token.clone().ok_or_else(|| {
                Refused::invalid(
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
        None => Err(Refused::invalid(
            "invalid_provider",
            "a calls integration's provider is twilio or standard",
        )),
    }
}

/// An integration's own `api_url` (a loopback stand-in for a provider's API): taken only where the
/// stage allows loopback, refused elsewhere.
pub(super) fn stand_in_url(
    body: &NewIntegration,
    allows_loopback: bool,
) -> Result<Option<String>, Refused> {
    match &body.api_url {
        Some(url) if allows_loopback => {
            check_outbound_url(url, true, None)?;
            Ok(Some(url.clone()))
        }
        Some(_) => Err(Refused::invalid(
            "invalid_url",
            "api_url is taken on the local and test stages only",
        )),
        None => Ok(None),
    }
}

/// An outbound URL must be https to a public host on port 443 or 80 (or the `port` the
/// integration names); loopback http only where the stage allows it.
fn check_outbound_url(raw: &str, allow_loopback: bool, port: Option<u16>) -> Result<(), Refused> {
    targets::check_url_on(raw, allow_loopback, port)
        .map_err(|why| Refused::invalid("invalid_url", why))
}
