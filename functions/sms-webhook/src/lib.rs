#![forbid(unsafe_code)]
//! `POST /hooks/{integration_id}/sms`: a prepaid SMS carrier's events on the shared edge. The
//! Standard Webhooks signature and its 5-minute replay window are checked before the body is
//! read (a delivery outside the window is 401 and writes nothing); `ledger::record` books each
//! event once. This crate is only what is particular to the carrier: its verifier and its parser.

use chrono::{DateTime, Utc};
use firmspace::config::{Config, ConfigError};
use firmspace::http::ApiError;
use firmspace::integrations::{Integration, IntegrationKind};
use firmspace::ledger::providers::SmsSettings;
use firmspace::ledger::{self, Acked, SmsEvent};
use firmspace::signature::{standard, SignatureError, Verified};
use firmspace::store::Store;
use firmspace::webhook::{Edge, Parsed, Recorded, Source};

/// The SMS webhook: the shared edge over the carrier source.
pub type App = Edge<Sms>;

pub fn app(store: Store) -> App {
    Edge::new(Sms, store)
}

pub struct Sms;

impl Source for Sms {
    const KIND: IntegrationKind = IntegrationKind::Sms;
    type Settings = SmsSettings;
    type Verifier = standard::Verifier;
    type Event = SmsEvent;
    type Stored = Acked;

    async fn from_config(_config: &Config) -> Result<Self, ConfigError> {
        Ok(Self)
    }

    fn verifier(&self, integration: &Integration) -> Result<standard::Verifier, SignatureError> {
        Self::settings(integration)
            .ok_or(SignatureError::BadKey)?
            .verifier()
    }

    fn parse(
        &self,
        integration: &Integration,
        verified: &Verified,
        body: &[u8],
        now: DateTime<Utc>,
    ) -> Result<Parsed<SmsEvent>, String> {
        let event_id = verified.id.as_deref().ok_or("webhook-id is missing")?;
        ledger::parse::parse(
            &integration.id.id,
            event_id,
            body,
            verified.at.unwrap_or(now),
        )
    }

    async fn record(
        &self,
        store: &Store,
        integration: &Integration,
        event: SmsEvent,
        now: DateTime<Utc>,
    ) -> Result<Recorded<Acked>, ApiError> {
        let written = ledger::record(store, integration, &event, now).await?;
        Ok(Recorded::one(event.key(), written))
    }
}
