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

/// A payments integration's own fields, per provider.
#[derive(Clone, Debug)]
pub enum PaymentSettings {
    /// Standard Webhooks: the `whsec_` secret.
    Standard {
        secret: SecretString,
    },
    /// Stripe: the endpoint's `whsec_` signing secret, used as-is.
    Stripe {
        secret: SecretString,
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
            Self::Standard { .. } | Self::Stripe { .. } => builder,
            Self::Monobank(merchant) => merchant.write(builder),
        }
    }

    /// The fields sealed with KMS: the signing secret, monobank's token.
    pub(crate) fn secrets(&self) -> BTreeMap<&'static str, &SecretString> {
        match self {
            Self::Standard { secret } | Self::Stripe { secret } => {
                BTreeMap::from([("secret", secret)])
            }
            Self::Monobank(merchant) => merchant.token.iter().map(|t| ("token", t)).collect(),
        }
    }

    pub(crate) fn read(
        item: &Item,
        secrets: &mut HashMap<String, SecretString>,
    ) -> Result<Self, StoreError> {
        let mut secret = || crate::vault::take_secret(secrets, "secret");
        Ok(match item.tag_of::<Provider>("provider")? {
            Provider::Standard => Self::Standard { secret: secret()? },
            Provider::Stripe => Self::Stripe { secret: secret()? },
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
