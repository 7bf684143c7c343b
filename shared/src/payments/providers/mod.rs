//! Acquiring providers: what each integration stores, and what each webhook says, read from its
//! (already verified) body. The parsers are pure: no I/O, no clock.

pub mod monobank;
pub mod standard;
pub mod stripe;

use crate::ids::{ExternalId, IdError};
use crate::money::{Currency, MoneyError};
use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::Deserialize;
use thiserror::Error;

pub use crate::integrations::payments::{PaymentSettings, Provider};

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
