#![forbid(unsafe_code)]
//! `POST /hooks/{integration_id}/bank` (and `GET`, monobank's check): monobank's personal webhook
//! on the shared edge. monobank signs nothing here: the integration id in the URL (128 random
//! bits, compared whole when the integration is looked up) is the secret, so a wrong id is 404
//! and writes nothing. Each `StatementItem` row is stored once under (integration, account, the
//! row's id), the same key the scheduled import and a CSV upload use. monobank waits 5 s: one
//! conditional put, answered at once.

use chrono::{DateTime, Utc};
use firmspace::bank::monobank::Pushed;
use firmspace::bank::providers::BankSettings;
use firmspace::bank::{self, Arrival, BankRow, BankTx};
use firmspace::config::{Config, ConfigError};
use firmspace::http::ApiError;
use firmspace::integrations::{Integration, IntegrationKind};
use firmspace::review::Kind;
use firmspace::signature::{AnyVerifier, SignatureError, Verified, Verify};
use firmspace::store::Store;
use firmspace::webhook::{Edge, Parsed, Recorded, Source};

/// The bank webhook: the shared edge over monobank's personal webhook.
pub type App = Edge<Bank>;

pub fn app(store: Store) -> App {
    Edge::new(Bank, store)
}

pub struct Bank;

/// The URL is the secret: a request that found its integration by its 128-bit id is monobank's.
struct UrlIsTheSecret;

impl Verify for UrlIsTheSecret {
    fn verify(
        &self,
        _headers: &lambda_http::http::HeaderMap,
        _body: &[u8],
        _now: DateTime<Utc>,
    ) -> Result<Verified, SignatureError> {
        Ok(Verified::default())
    }
}

/// A row pushed for this integration's account.
pub struct PushedRow {
    row: BankRow,
}

impl Source for Bank {
    const REVIEW: Kind = Kind::Bank;
    const KIND: IntegrationKind = IntegrationKind::Bank;
    const HANDSHAKE: bool = true;
    /// The URL is the credential: the token stays sealed, and this function's role has no
    /// `kms:Decrypt`.
    const OPENS_SECRETS: bool = false;
    type Settings = BankSettings;
    type Verifier = AnyVerifier;
    type Event = PushedRow;
    type Stored = BankTx;

    async fn from_config(_config: &Config) -> Result<Self, ConfigError> {
        Ok(Self)
    }

    /// Only a monobank integration has a webhook: a CSV one's id is answered 404 like any id
    /// that names no webhook.
    fn serves(&self, integration: &Integration) -> bool {
        matches!(
            Self::settings(integration),
            Some(BankSettings::Monobank { .. })
        )
    }

    fn verifier(&self, integration: &Integration) -> Result<AnyVerifier, SignatureError> {
        match Self::settings(integration) {
            Some(BankSettings::Monobank { .. }) => Ok(Box::new(UrlIsTheSecret)),
            _ => Err(SignatureError::BadKey),
        }
    }

    fn parse(
        &self,
        integration: &Integration,
        _verified: &Verified,
        body: &[u8],
        _now: DateTime<Utc>,
    ) -> Result<Parsed<PushedRow>, String> {
        let pushed: Pushed = serde_json::from_slice(body).map_err(|e| {
            format!(
                "not a StatementItem: {}",
                firmspace::http::plain(&e.to_string())
            )
        })?;
        if pushed.kind != "StatementItem" {
            return Ok(Parsed::Ignored(pushed.kind));
        }
        let data = pushed.data.ok_or("StatementItem without data")?;
        let account = Self::settings(integration).map(BankSettings::account);
        // Another account of the same token: not this integration's statement. The account was
        // resolved when the integration was made (`0` to the default's id), so this is exact.
        if account.is_some_and(|a| a != data.account) {
            return Ok(Parsed::Ignored("other_account".into()));
        }
        Ok(Parsed::Event(PushedRow {
            row: data.statement_item.row()?,
        }))
    }

    async fn record(
        &self,
        store: &Store,
        integration: &Integration,
        pushed: PushedRow,
        now: DateTime<Utc>,
    ) -> Result<Recorded<BankTx>, ApiError> {
        let account = Self::settings(integration)
            .map(BankSettings::account)
            .unwrap_or("0");
        let tx = BankTx::new(
            integration.org(),
            &integration.id.id,
            account,
            pushed.row,
            Arrival::Webhook,
            now,
        );
        let written = bank::store_row(store, &tx).await?;
        Ok(Recorded::one(tx.key(), written))
    }

    /// monobank's check before it sends rows: 200 for a monobank integration.
    fn handshake(
        &self,
        integration: &Integration,
        _req: &lambda_http::Request,
    ) -> Result<String, ApiError> {
        match Self::settings(integration) {
            Some(BankSettings::Monobank { .. }) => Ok("ok".into()),
            _ => Err(ApiError::not_found("integration")),
        }
    }
}
