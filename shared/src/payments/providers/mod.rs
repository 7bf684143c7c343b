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

/// The payment (or, keyed `{original}:reversal`, the reversal) a webhook event of
/// `integration` books, as its webhook books it, whether it arrived there or was recovered from
/// the provider afterwards: `None` for an event it acknowledges and does not book.
pub fn input_of(
    integration: &crate::integrations::Integration,
    provider: Provider,
    event: WebhookEvent,
    now: DateTime<Utc>,
) -> Option<super::PaymentInput> {
    let source = match provider {
        Provider::Standard => super::Source::Integration(integration.id.clone()),
        Provider::Stripe => super::Source::Stripe,
        Provider::Monobank => super::Source::Monobank,
    };
    let (paid, reverses) = match event {
        WebhookEvent::Ignored(_) => return None,
        WebhookEvent::Paid(paid) => (paid, None),
        WebhookEvent::Reversed(paid) => {
            let original = paid.external_id.clone();
            let key = super::reversal_id(&original);
            (
                Paid {
                    external_id: key,
                    ..paid
                },
                Some(original),
            )
        }
    };
    Some(super::PaymentInput {
        org: integration.org().clone(),
        invoice_ref: paid.invoice_ref,
        source,
        external_id: paid.external_id,
        amount: paid.amount,
        currency: paid.currency,
        at: paid.at.unwrap_or(now),
        actor: format!("integration:{}", integration.id),
        reverses,
        reversible: provider == Provider::Monobank,
        via: Some(integration.id.id.clone()),
    })
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
            let _ = stripe::parse(&body, false);
            let _ = monobank::parse(&body);
        }
    }
}
