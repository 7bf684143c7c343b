//! Payment integrations: a Standard Webhooks sender, a Stripe endpoint, or a monobank merchant.

use crate::store::item::{Builder, Read};
use crate::store::{Item, StoreError};
use chrono::{DateTime, Utc};
use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Provider {
    Standard,
    Stripe,
    Monobank,
}

/// Whether a Stripe integration holds an API key (the key itself is sealed).
pub const HOLDS_API_KEY: &str = "holds_api_key";
/// Marks in clear a Stripe integration whose API key is a live one (`rk_live_…`).
pub const LIVE: &str = "live";

/// Whether a Stripe API key is a live one.
pub fn is_live(key: &SecretString) -> bool {
    secrecy::ExposeSecret::expose_secret(key).starts_with("rk_live_")
}

/// A payments integration's own fields, per provider.
#[derive(Clone, Debug)]
pub enum PaymentSettings {
    /// Standard Webhooks: the `whsec_` secret.
    Standard {
        secret: SecretString,
    },
    /// Stripe: the endpoint's `whsec_` signing secret, used as-is; and, to recover what Stripe
    /// sent while we were down (its events list), a restricted API key (`rk_…`, sealed apart)
    /// and, on the local and test stages, another API base URL. `live`: its key is a live one
    /// (`rk_live_…`, marked in clear): an event in test mode (`livemode: false`) books nothing.
    Stripe {
        secret: SecretString,
        api_key: Option<SecretString>,
        api_url: Option<String>,
        live: bool,
    },
    Monobank(Merchant),
}

impl PaymentSettings {
    pub fn provider(&self) -> Provider {
        match self {
            Self::Standard { .. } => Provider::Standard,
            Self::Stripe { .. } => Provider::Stripe,
            Self::Monobank(_) => Provider::Monobank,
        }
    }

    /// The fields kept in clear; the secrets are sealed apart (`secrets`).
    pub(crate) fn write(&self, builder: Builder) -> Builder {
        let builder = builder.tag("provider", &self.provider());
        match self {
            Self::Standard { .. } => builder,
            Self::Stripe {
                api_key,
                api_url,
                live,
                ..
            } => builder
                .opt_str("api_url", api_url.as_deref())
                .bool(HOLDS_API_KEY, api_key.is_some())
                .bool(LIVE, *live),
            Self::Monobank(merchant) => merchant.write(builder),
        }
    }

    /// The fields sealed with KMS: the signing secret, monobank's token.
    pub(crate) fn secrets(&self) -> BTreeMap<&'static str, &SecretString> {
        match self {
            Self::Standard { secret } => BTreeMap::from([("secret", secret)]),
            Self::Stripe { secret, .. } => BTreeMap::from([("secret", secret)]),
            Self::Monobank(merchant) => merchant.token.iter().map(|t| ("token", t)).collect(),
        }
    }

    /// The fields sealed apart, opened only by what calls the provider (a recovery), never by
    /// the webhook: Stripe's API key.
    pub(crate) fn apart(&self) -> BTreeMap<&'static str, &SecretString> {
        match self {
            Self::Stripe {
                api_key: Some(key), ..
            } => BTreeMap::from([("api_key", key)]),
            _ => BTreeMap::new(),
        }
    }

    pub(crate) fn read(
        item: &Item,
        secrets: &mut HashMap<String, SecretString>,
    ) -> Result<Self, StoreError> {
        Ok(match item.tag_of::<Provider>("provider")? {
            Provider::Standard => Self::Standard {
                secret: crate::vault::take_secret(secrets, "secret")?,
            },
            Provider::Stripe => Self::Stripe {
                secret: crate::vault::take_secret(secrets, "secret")?,
                // Marked in clear, so a function that leaves the secrets sealed knows it is there.
                // Secrets sealed before the key was set (a rotation's previous ones) hold none.
                api_key: match item.bool_of(HOLDS_API_KEY) {
                    true => crate::vault::take_secret(secrets, "api_key").ok(),
                    false => None,
                },
                api_url: item.opt_str("api_url").map(str::to_owned),
                live: item.bool_of(LIVE),
            },
            Provider::Monobank => Self::Monobank(Merchant::read(item, secrets)?),
        })
    }
}

/// A monobank merchant as an integration knows it.
#[derive(Clone, Debug)]
pub struct Merchant {
    /// Base64 of the PEM from `GET /api/merchant/pubkey`.
    pub public_key: String,
    /// The merchant `X-Token`: lets the webhook fetch a rotated key.
    pub token: Option<SecretString>,
    /// When the key was last fetched from monobank.
    pub key_fetched_at: Option<DateTime<Utc>>,
}

impl Merchant {
    /// The fields kept in clear (the token is sealed apart).
    pub(crate) fn write(&self, builder: Builder) -> Builder {
        builder.str("public_key", &self.public_key).opt_str(
            "key_fetched_at",
            self.key_fetched_at.map(crate::time::format),
        )
    }

    pub(crate) fn read(
        item: &Item,
        secrets: &mut std::collections::HashMap<String, SecretString>,
    ) -> Result<Self, StoreError> {
        Ok(Self {
            public_key: item.str_of("public_key")?.to_owned(),
            token: secrets.remove("token"),
            key_fetched_at: item.opt_time("key_fetched_at"),
        })
    }
}
