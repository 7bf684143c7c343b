//! Asking a payment's provider before money is booked (monobank, with the merchant's token):
//! once per new payment, never for a duplicate or a reversal.

use super::PaymentInput;

/// What the provider itself says about the first arrival of a payment, asked before it books.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Confirmation {
    Confirmed,
    /// Not this merchant's, or not paid: stored with applied 0 and an `unconfirmed_payment`
    /// review item.
    Refused(String),
    /// The provider could not be asked now: nothing is written, the sender retries (503).
    Unavailable(String),
}

/// Asks a payment's provider before money is booked. Asked once per new payment (never for a
/// duplicate, never for a reversal), after the read and before the transaction.
pub trait Confirm: Sync {
    fn confirm(
        &self,
        input: &PaymentInput,
    ) -> impl std::future::Future<Output = Confirmation> + Send;

    /// Whether it asks anybody: a payment that is confirmed reads consistently first, so a copy
    /// racing its twin is never taken for new and asks the provider again.
    fn asks(&self) -> bool {
        true
    }
}

/// Nobody to ask: the signature is what is trusted.
pub struct Trusted;

impl Confirm for Trusted {
    async fn confirm(&self, _: &PaymentInput) -> Confirmation {
        Confirmation::Confirmed
    }

    fn asks(&self) -> bool {
        false
    }
}
