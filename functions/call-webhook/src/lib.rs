#![forbid(unsafe_code)]
//! `POST /hooks/{integration_id}/calls`: call results from SIP providers on the shared edge. This
//! crate is only what is particular to calls: a verifier per provider (Twilio's over the public
//! URL, Standard Webhooks), a parser per provider, and `calls::record` as the record step. Only a
//! final status makes a call; the first report answers 201, every repeat 200 with the stored call.
//! A generic sender's calls are keyed within its integration, Twilio's within the organisation.

use chrono::{DateTime, Utc};
use firmspace::calls::providers::{self, webhook_url, CallProvider, CallSettings, Posted};
use firmspace::calls::{self, Call, CallInput, Checked};
use firmspace::config::{self, Config, ConfigError};
use firmspace::http::ApiError;
use firmspace::integrations::{Integration, IntegrationKind};
use firmspace::review::Kind;
use firmspace::signature::{self, AnyVerifier, SignatureError, Verified};
use firmspace::store::Store;
use firmspace::webhook::{Edge, Parsed, Recorded, Source};
use secrecy::ExposeSecret;

/// The call webhook: the shared edge over the calls source.
pub type App = Edge<Calls>;

/// `public_url` is the base the providers were given (`PUBLIC_URL`): Twilio signs the full URL.
pub fn app(store: Store, public_url: &str) -> App {
    Edge::new(
        Calls {
            public_url: public_url.to_owned(),
        },
        store,
    )
}

pub struct Calls {
    public_url: String,
}

impl Source for Calls {
    const REVIEW: Kind = Kind::Call;
    const KIND: IntegrationKind = IntegrationKind::Calls;
    /// The first report of a call creates it.
    const CREATES: bool = true;
    type Settings = CallSettings;
    type Verifier = AnyVerifier;
    type Event = CallInput;
    type Stored = Call;

    /// `PUBLIC_URL`: the base the providers were given.
    async fn from_config(_config: &Config) -> Result<Self, ConfigError> {
        Ok(Self {
            public_url: config::require("PUBLIC_URL")?,
        })
    }

    fn verifier(&self, integration: &Integration) -> Result<AnyVerifier, SignatureError> {
        Ok(
            match Self::settings(integration).ok_or(SignatureError::BadKey)? {
                CallSettings::Twilio { auth_token } => Box::new(signature::twilio::Verifier::new(
                    auth_token.expose_secret(),
                    &webhook_url(&self.public_url, &integration.id),
                )?),
                CallSettings::Standard { secret } => {
                    Box::new(signature::standard::Verifier::new(secret.expose_secret())?)
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
    ) -> Result<Parsed<CallInput>, String> {
        let provider = Self::settings(integration).map(CallSettings::provider);
        let posted = match provider {
            Some(CallProvider::Twilio) => providers::twilio(body)?,
            Some(CallProvider::Standard) => providers::standard(body)?,
            None => return Err("not a calls integration".into()),
        };
        let fields = match posted {
            Posted::Ignored(kind) => return Ok(Parsed::Ignored(kind)),
            Posted::Fields(fields) => fields,
        };
        let at = verified.at.unwrap_or(now);
        match fields.check(integration.org(), &integration.id.id, at) {
            // A generic sender's call ids are its own: keyed within the integration. Twilio's
            // are the account's, like a softphone's: keyed within the organisation.
            Ok(Checked::Call(mut call)) => {
                if provider == Some(CallProvider::Standard) {
                    call.scope = Some(integration.id.id.to_string());
                }
                Ok(Parsed::Event(call))
            }
            Ok(Checked::Pending(status)) => Ok(Parsed::Ignored(status)),
            Err(e) => Err(e.to_string()),
        }
    }

    async fn record(
        &self,
        store: &Store,
        _integration: &Integration,
        input: CallInput,
        _now: DateTime<Utc>,
    ) -> Result<Recorded<Call>, ApiError> {
        let written = calls::record(store, &input).await?;
        Ok(Recorded::one(input.key(), written))
    }
}
