#![forbid(unsafe_code)]
//! `POST /hooks/{integration_id}/payments`: acquiring webhooks on the shared edge. This crate is
//! only what is particular to payments: a verifier per provider, a parser per provider, and
//! `register_payment` as the record step.

mod monobank_keys;
mod monobank_status;

use chrono::{DateTime, Utc};
use firmspace::config::{self, Config, ConfigError};
use firmspace::http::ApiError;
use firmspace::integrations::{Integration, IntegrationKind};
use firmspace::payments::providers::{
    self, monobank, standard, stripe, PaymentSettings, Provider, WebhookEvent,
};
use firmspace::payments::{
    on_its_payments_invoice, register_confirmed, register_payment, PaymentEvent, PaymentInput,
};
use firmspace::signature::{self, AnyVerifier, SignatureError, Verified};

use firmspace::store::Store;
use firmspace::webhook::{Edge, Parsed, Recorded, Source};
use monobank_keys::MonobankKeys;
use secrecy::ExposeSecret;

/// The payment webhook: the shared edge over the payments source.
pub type App = Edge<Payments>;

/// Where monobank's API is when `MONOBANK_API_URL` does not say.
pub const MONOBANK_API: &str = "https://api.monobank.ua";

pub fn app(store: Store) -> App {
    app_with_monobank_api(store, MONOBANK_API)
}

/// `monobank_api` is where a rotated merchant key is fetched (a loopback server in tests).
pub fn app_with_monobank_api(store: Store, monobank_api: &str) -> App {
    Edge::new(
        Payments {
            monobank: MonobankKeys::new(monobank_api),
        },
        store,
    )
}

pub struct Payments {
    monobank: MonobankKeys,
}

impl Source for Payments {
    const KIND: IntegrationKind = IntegrationKind::Payments;
    type Settings = PaymentSettings;
    type Verifier = AnyVerifier;

    /// `MONOBANK_API_URL`, where a rotated monobank key is fetched (`MONOBANK_API` unless set).
    async fn from_config(_config: &Config) -> Result<Self, ConfigError> {
        let monobank_api = config::var("MONOBANK_API_URL").unwrap_or_else(|| MONOBANK_API.into());
        Ok(Self {
            monobank: MonobankKeys::new(&monobank_api),
        })
    }
    type Event = PaymentInput;
    type Stored = PaymentEvent;

    fn verifier(&self, integration: &Integration) -> Result<AnyVerifier, SignatureError> {
        Ok(
            match Self::settings(integration).ok_or(SignatureError::BadKey)? {
                PaymentSettings::Standard { secret } => {
                    Box::new(signature::standard::Verifier::new(secret.expose_secret())?)
                }
                PaymentSettings::Stripe { secret, .. } => {
                    Box::new(signature::stripe::Verifier::new(secret.expose_secret())?)
                }
                PaymentSettings::Monobank(merchant) => {
                    Box::new(signature::monobank::Verifier::new(&merchant.public_key)?)
                }
            },
        )
    }

    fn parse(
        &self,
        integration: &Integration,
        verified: &Verified,
        body: &[u8],
        now: DateTime<Utc>,
    ) -> Result<Parsed<PaymentInput>, String> {
        let settings = Self::settings(integration).ok_or("not a payments integration")?;
        let provider = settings.provider();
        let live = matches!(settings, PaymentSettings::Stripe { live: true, .. });
        let event = match provider {
            Provider::Standard => standard::parse(body, verified.id.as_deref(), verified.at),
            Provider::Stripe => stripe::parse(body, live),
            Provider::Monobank => monobank::parse(body),
        };
        Ok(match event.map_err(|e| e.to_string())? {
            WebhookEvent::Ignored(status) => Parsed::Ignored(status),
            event => match providers::input_of(integration, provider, event, now) {
                Some(input) => Parsed::Event(input),
                None => Parsed::Ignored("not booked".into()),
            },
        })
    }

    async fn record(
        &self,
        store: &Store,
        integration: &Integration,
        input: PaymentInput,
        _now: DateTime<Utc>,
    ) -> Result<Recorded<PaymentEvent>, ApiError> {
        let input = on_its_payments_invoice(store, input).await?;
        let registered = match Self::settings(integration) {
            Some(PaymentSettings::Monobank(monobank::Merchant {
                token: Some(token), ..
            })) => {
                let confirmer = self.monobank.confirmer(&integration.id.id, token);
                register_confirmed(store, &input, &confirmer).await?
            }
            _ => register_payment(store, &input).await?,
        };
        Ok(Recorded::one(input.event_key(), registered))
    }

    async fn refresh(
        &self,
        store: &Store,
        integration: &Integration,
        now: DateTime<Utc>,
    ) -> Option<Integration> {
        match Self::settings(integration)? {
            PaymentSettings::Monobank(merchant) => {
                self.monobank
                    .fresh_key(store, integration, merchant, now)
                    .await
            }
            _ => None,
        }
    }
}
