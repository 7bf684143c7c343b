//! monobank rotates its merchant key: when `X-Sign` does not verify with the stored key and the
//! integration has the merchant `X-Token`, fetch the current key and keep it if it differs. The
//! fetch is held to once a minute per integration, whatever its outcome, by a lease written with
//! a conditional update before the call: forged `X-Sign` headers cannot make us call monobank
//! with the merchant's token at the request rate.

use crate::monobank_status::{Answers, Confirmer};
use chrono::{DateTime, Duration, Utc};
use firmspace::integrations::{integration_pk, Integration, Settings};
use firmspace::payments::providers::monobank::Merchant;
use firmspace::payments::providers::PaymentSettings;
use firmspace::store::item::s;
use firmspace::store::{Cond, Store, Update};
use firmspace::time;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::Mutex;

/// At most one key fetch per integration in this time.
pub const FETCH_EVERY: Duration = Duration::seconds(60);

pub struct MonobankKeys {
    http: reqwest::Client,
    base_url: String,
    /// When this container last tried each integration: forged requests within the minute
    /// cost neither a call to monobank nor a write.
    tried: Mutex<HashMap<String, DateTime<Utc>>>,
    /// monobank's recent answers about invoices (see `monobank_status`).
    answers: Answers,
}

#[derive(Deserialize)]
struct PubKey {
    key: String,
}

impl MonobankKeys {
    pub fn new(base_url: &str) -> Self {
        Self {
            http: firmspace::http::client(reqwest::Client::builder()),
            base_url: base_url.trim_end_matches('/').to_owned(),
            tried: Mutex::new(HashMap::new()),
            answers: Mutex::new(HashMap::new()),
        }
    }

    /// A confirmer of the integration's new payments with its merchant's token.
    pub fn confirmer<'a>(&'a self, integration: &'a str, token: &'a SecretString) -> Confirmer<'a> {
        Confirmer {
            http: &self.http,
            base_url: &self.base_url,
            token,
            integration,
            answers: &self.answers,
        }
    }

    /// Whether this container may try now; a `true` counts as the try.
    fn try_now(&self, integration: &Integration, merchant: &Merchant, now: DateTime<Utc>) -> bool {
        if merchant
            .key_fetched_at
            .is_some_and(|t| now - t < FETCH_EVERY)
        {
            return false;
        }
        let mut tried = self.tried.lock().unwrap_or_else(|p| p.into_inner());
        match tried.get(&integration.id.id) {
            Some(t) if now - *t < FETCH_EVERY => false,
            _ => {
                tried.insert(integration.id.id.clone(), now);
                true
            }
        }
    }

    async fn fetch(&self, token: &str) -> Option<String> {
        let res = self
            .http
            .get(format!("{}/api/merchant/pubkey", self.base_url))
            .header("X-Token", token)
            .timeout(std::time::Duration::from_secs(3))
            .send()
            .await
            .ok()?;
        if !res.status().is_success() {
            tracing::warn!(status = %res.status(), "monobank pubkey fetch refused");
            return None;
        }
        res.json::<PubKey>().await.ok().map(|k| k.key)
    }

    /// Takes the fetch lease: `false` when a fetch happened less than a minute ago.
    async fn lease(&self, store: &Store, integration: &Integration, now: DateTime<Utc>) -> bool {
        let update = Update::new()
            .set("key_fetched_at", s(time::format(now)))
            .when(Cond::AbsentOrBefore(
                "key_fetched_at".into(),
                s(time::format(now - FETCH_EVERY)),
            ));
        match store
            .update_if(&integration_pk(&integration.id), &update)
            .await
        {
            Ok(taken) => taken,
            Err(e) => {
                tracing::error!(error.message = %e, error.cause_chain = ?e, "monobank key lease failed");
                false
            }
        }
    }

    /// The integration with monobank's current key, when it differs from the stored one.
    pub async fn fresh_key(
        &self,
        store: &Store,
        integration: &Integration,
        merchant: &Merchant,
        now: DateTime<Utc>,
    ) -> Option<Integration> {
        let token = merchant.token.as_ref()?;
        if !self.try_now(integration, merchant, now) || !self.lease(store, integration, now).await {
            return None;
        }
        let key = self.fetch(token.expose_secret()).await?;
        if key == merchant.public_key {
            return None;
        }
        if let Err(e) = Merchant::keep_key(store, &integration.id, &key, now).await {
            tracing::error!(error.message = %e, error.cause_chain = ?e, "could not store the rotated key");
        }
        tracing::info!(integration = %integration.id.digest(), "monobank public key fetched");
        Some(Integration {
            settings: Settings::Payments(PaymentSettings::Monobank(Merchant {
                public_key: key,
                token: merchant.token.clone(),
                key_fetched_at: Some(now),
            })),
            ..integration.clone()
        })
    }
}
