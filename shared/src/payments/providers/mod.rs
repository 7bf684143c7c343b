//! Acquiring providers: what each integration stores, and what each webhook says, read from its
//! (already verified) body. The parsers are pure: no I/O, no clock.

pub mod monobank;
pub mod standard;
pub mod stripe;

use crate::ids::{ExternalId, IdError};
use crate::money::{Currency, MoneyError};
use crate::store::item::{Builder, Read};
use crate::store::{Item, StoreError};
use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use thiserror::Error;

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
    Monobank(monobank::Merchant),
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
        let mut secret = || crate::integrations::take_secret(item, secrets, "secret");
        Ok(match item.tag_of::<Provider>("provider")? {
            Provider::Standard => Self::Standard { secret: secret()? },
            Provider::Stripe => Self::Stripe { secret: secret()? },
            Provider::Monobank => Self::Monobank(monobank::Merchant::read(item, secrets)?),
        })
    }
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum ParseError {
    #[error("body is not the provider's JSON: {0}")]
    Json(String),
    #[error(transparent)]
    Money(#[from] MoneyError),
    #[error(transparent)]
    Id(#[from] IdError),
    #[error(transparent)]
    Field(#[from] crate::fields::FieldError),
}

/// The payer's reference to our invoice, held to the limit of a reference.
fn invoice_ref(raw: Option<String>) -> Result<Option<String>, ParseError> {
    Ok(crate::fields::optional(raw.as_deref(), |r| {
        crate::fields::reference("invoice_id", r, crate::fields::REF_MAX)
    })?)
}

/// A paid (or reversed) payment as the provider reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Paid {
    pub external_id: ExternalId,
    pub invoice_ref: Option<String>,
    pub amount: Option<Decimal>,
    pub currency: Option<Currency>,
    pub at: Option<DateTime<Utc>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WebhookEvent {
    /// A status before paid (or one we do not book): acknowledged, nothing written.
    Ignored(String),
    Paid(Paid),
    /// The payment with this external id was taken back.
    Reversed(Paid),
}

fn json<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, ParseError> {
    serde_json::from_slice(body).map_err(|e| ParseError::Json(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn parsers_never_panic_on_arbitrary_bytes(body in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = standard::parse(&body, None, None);
            let _ = stripe::parse(&body);
            let _ = monobank::parse(&body);
        }
    }
}
