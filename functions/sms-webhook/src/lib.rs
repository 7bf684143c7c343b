#![forbid(unsafe_code)]
//! `POST /hooks/{integration_id}/sms`: a prepaid SMS carrier's events on the shared edge. The
//! Standard Webhooks signature and its 5-minute replay window are checked before the body is
//! read (a delivery outside the window is 401 and writes nothing); `ledger::record` books each
//! event once. This crate is only what is particular to the carrier: its verifier, its parser,
//! and how a ledger outcome reads to the edge.

use anyhow::Context;
use chrono::{DateTime, Utc};
use firmspace::config::Config;
use firmspace::http::ApiError;
use firmspace::integrations::{Integration, IntegrationKind, Settings};
use firmspace::ledger::providers::SmsSettings;
use firmspace::ledger::{self, Recorded as Booked, SmsEvent};
use firmspace::signature::{standard, SignatureError, Verified};
use firmspace::store::Store;
use firmspace::webhook::{Edge, Outcome, Parsed, Recorded, Source};
use secrecy::ExposeSecret;

/// The SMS webhook: the shared edge over the carrier source.
pub type App = Edge<Sms>;

pub fn app(store: Store) -> App {
    Edge::new(Sms, store)
}

pub async fn from_env() -> anyhow::Result<App> {
    let config = Config::from_env().context("loading configuration")?;
    Ok(app(config.store().await))
}

pub struct Sms;

impl Source for Sms {
    const KIND: IntegrationKind = IntegrationKind::Sms;
    type Verifier = standard::Verifier;
    type Event = SmsEvent;

    fn verifier(&self, integration: &Integration) -> Result<standard::Verifier, SignatureError> {
        match &integration.settings {
            Settings::Sms(SmsSettings::Standard { secret }) => {
                standard::Verifier::new(secret.expose_secret())
            }
            _ => Err(SignatureError::BadKey),
        }
    }

    fn label(&self, _integration: &Integration) -> &'static str {
        "sms"
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
    ) -> Result<Recorded, ApiError> {
        let key = event.key();
        let (answer, outcome) = match ledger::record(store, integration, &event, now).await? {
            Booked::New { answer, review } => (answer, Outcome::Stored { review }),
            Booked::Repush(answer) => (answer, Outcome::Duplicate),
            Booked::Duplicate {
                answer,
                stored_fingerprint,
            } if stored_fingerprint != event.fingerprint => (
                answer,
                Outcome::Conflict {
                    fingerprint: event.fingerprint.clone(),
                    stored: stored_fingerprint,
                },
            ),
            Booked::Duplicate { answer, .. } => (answer, Outcome::Duplicate),
        };
        Ok(Recorded {
            key,
            answer,
            outcome,
        })
    }
}
