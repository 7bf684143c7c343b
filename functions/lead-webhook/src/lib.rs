#![forbid(unsafe_code)]
//! `POST /hooks/{integration_id}/leads`: a website form's (or a form service's) submissions on
//! the shared edge. The Standard Webhooks signature and its 5-minute window are checked before
//! the body is read; `leads::record` makes one contact and one deal card per submission, however
//! often and under however many `webhook-id`s it comes. This crate is only what is particular to
//! the form: its verifier and its parser. The first delivery answers 201, every repeat 200.

use chrono::{DateTime, Utc};
use firmspace::config::{Config, ConfigError};
use firmspace::http::ApiError;
use firmspace::integrations::leads::LeadSettings;
use firmspace::integrations::{Integration, IntegrationKind};
use firmspace::leads::{self, Lead, LeadInput, Posted};
use firmspace::signature::{standard, SignatureError, Verified};
use firmspace::store::Store;
use firmspace::webhook::{Edge, Parsed, Recorded, Source};

/// The lead webhook: the shared edge over the form source.
pub type App = Edge<Leads>;

pub fn app(store: Store) -> App {
    Edge::new(Leads, store)
}

pub struct Leads;

impl Source for Leads {
    const KIND: IntegrationKind = IntegrationKind::Leads;
    /// The first delivery of a submission creates its card.
    const CREATES: bool = true;
    type Settings = LeadSettings;
    type Verifier = standard::Verifier;
    type Event = LeadInput;
    type Stored = Lead;

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
    ) -> Result<Parsed<LeadInput>, String> {
        let webhook_id = verified.id.as_deref().ok_or("webhook-id is missing")?;
        let at = verified.at.unwrap_or(now);
        match leads::parse(integration.org(), &integration.id.id, webhook_id, body, at) {
            Ok(Posted::Lead(input)) => Ok(Parsed::Event(*input)),
            Ok(Posted::Ignored(kind)) => Ok(Parsed::Ignored(kind)),
            Err(e) => Err(e.to_string()),
        }
    }

    async fn record(
        &self,
        store: &Store,
        _integration: &Integration,
        input: LeadInput,
        _now: DateTime<Utc>,
    ) -> Result<Recorded<Lead>, ApiError> {
        let written = leads::record(store, &input).await?;
        Ok(Recorded::one(input.key(), written))
    }
}
