//! monobank rotates its merchant key: when `X-Sign` does not verify with the stored key and the
//! integration has the merchant `X-Token`, fetch the current key once (at most once a minute per
//! integration), verify again, and keep the new key.

use chrono::{DateTime, Duration, Utc};
use firmspace::orgs::{self, Integration};
use firmspace::signature::{monobank, SignatureError};
use firmspace::store::Store;
use secrecy::ExposeSecret;
use serde::Deserialize;

pub struct MonobankKeys {
    http: reqwest::Client,
    base_url: String,
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

    /// The first verification failed with the stored key: try the provider's current key.
    pub async fn verify_with_fresh_key(
        &self,
        store: &Store,
        integration: &Integration,
        x_sign: Option<&str>,
        body: &[u8],
        now: DateTime<Utc>,
    ) -> Result<(), SignatureError> {
        let recently = integration
            .key_fetched_at
            .is_some_and(|t| now - t < Duration::seconds(60));
        let Some(token) = integration.token.as_ref().filter(|_| !recently) else {
            return Err(SignatureError::Mismatch);
        };
        let key = self
            .fetch(token.expose_secret())
            .await
            .ok_or(SignatureError::Mismatch)?;
        if integration.public_key.as_deref() == Some(key.as_str()) {
            return Err(SignatureError::Mismatch);
        }
        monobank::verify(&key, x_sign, body)?;
        if let Err(e) = orgs::set_public_key(store, &integration.id, &key, now).await {
            tracing::error!(error.message = %e, error.cause_chain = ?e, "could not store the rotated key");
        }
        tracing::info!(integration = %integration.id.id, "monobank public key rotated");
        Ok(())
    }
}
