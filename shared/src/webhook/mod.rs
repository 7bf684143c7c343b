//! The webhook edge: one handler for every `/hooks/{integration_id}/{kind}` function.
//!
//! route → integration (cached, re-read once on a verification failure, rate-limited) → size
//! limit → verify (a verifier built once per integration) → parse into "ignored" or a typed
//! event → record (new, a replay of the stored answer, or a conflict) → the answer. A source
//! declares its integration kind, builds its verifier, parses and records; it copies no wiring.

/// Where a written delivery becomes an answer: the domain's, shared with the commands.
pub use crate::delivery as answer;
pub mod cache;
mod edge;
pub mod limit;
mod unparseable;

pub use answer::{Recorded, Told};
pub use edge::Edge;

use crate::config::{Config, ConfigError};
use crate::http::ApiError;
use crate::integrations::{Integration, IntegrationKind, ProviderSettings};
use crate::review::Kind;
pub use crate::signature::Parsed;
use crate::signature::{SignatureError, Verified, Verify};
use crate::store::{Answer, Store};
use chrono::{DateTime, Utc};
use std::future::Future;

/// An event source behind `/hooks/{integration_id}/{kind}`.
pub trait Source: Send + Sync {
    /// The integrations this source serves, and its route's last segment.
    const KIND: IntegrationKind;
    /// What the integrations of this kind are configured with.
    type Settings: ProviderSettings;
    type Verifier: Verify;
    type Event: Send;
    /// What one of its events is stored as, and answers with.
    type Stored: Answer + Send;
    /// What this source's review items (a `payload_mismatch`) are about.
    const REVIEW: Kind = Kind::Webhook;
    /// Whether its verifier needs the integration's secrets opened (a KMS `Decrypt`); a source
    /// that needs none loads its integrations with them left sealed.
    const OPENS_SECRETS: bool = true;

    /// The settings of an integration of this source's kind.
    fn settings(integration: &Integration) -> Option<&Self::Settings> {
        Self::Settings::of(&integration.settings)
    }

    /// Builds the verifier of an integration of this kind, once per loaded integration.
    fn verifier(&self, integration: &Integration) -> Result<Self::Verifier, SignatureError>;

    /// Whether this integration of the source's kind takes deliveries at all (a CSV bank
    /// integration has no webhook): one that does not is answered as unknown, 404.
    fn serves(&self, _integration: &Integration) -> bool {
        true
    }

    /// The provider's name, for metrics and logs.
    fn label(&self, integration: &Integration) -> &'static str {
        Self::settings(integration).map_or("unknown", ProviderSettings::label)
    }

    /// Reads a verified body. An error is a body that cannot be read: it is kept for a person.
    fn parse(
        &self,
        integration: &Integration,
        verified: &Verified,
        body: &[u8],
        now: DateTime<Utc>,
    ) -> Result<Parsed<Self::Event>, String>;

    /// Stores the event under its key, once.
    fn record(
        &self,
        store: &Store,
        integration: &Integration,
        event: Self::Event,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<Recorded<Self::Stored>, ApiError>> + Send;

    /// Whether the first delivery of an event creates what it names (a call, a lead's card):
    /// answered 201, every repeat 200. Otherwise every delivery is answered 200.
    const CREATES: bool = false;

    /// The status of a recorded delivery's answer.
    fn status(new: bool) -> u16 {
        match Self::CREATES && new {
            true => 201,
            false => 200,
        }
    }

    /// Whether the route also takes `GET`: a subscription handshake (WhatsApp's).
    const HANDSHAKE: bool = false;

    /// The source as its deployed function makes it from its configuration: what it needs
    /// beyond the store (a public URL, a bucket, a provider's API), read from the environment.
    fn from_config(config: &Config) -> impl Future<Output = Result<Self, ConfigError>> + Send
    where
        Self: Sized;

    /// Answers a `GET` on the route with the integration loaded: the text to answer 200
    /// `text/plain`, or the refusal. Only called when `HANDSHAKE` is true.
    fn handshake(
        &self,
        _integration: &Integration,
        _req: &lambda_http::Request,
    ) -> Result<String, ApiError> {
        Err(ApiError::method_not_allowed(&["POST"]))
    }

    /// A last chance after the freshest stored copy failed to verify: a provider that rotates
    /// keys on its side (monobank) may fetch the current key and return the updated integration.
    fn refresh(
        &self,
        _store: &Store,
        _integration: &Integration,
        _now: DateTime<Utc>,
    ) -> impl Future<Output = Option<Integration>> + Send {
        async { None }
    }
}
