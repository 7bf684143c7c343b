//! Money: one `register_payment` that every path to money ends in (webhook, manual button,
//! assistant, bank reconciliation).

pub mod invoice;
pub mod providers;
pub mod record;
pub mod register;
pub mod rules;

pub use invoice::{Invoice, InvoiceStatus, NewInvoice};
pub use record::PaymentRecord;
pub use register::{register_payment, PaymentError, Registered};
pub use rules::{decide, Decision, Outcome, Related};

use crate::ids::{ExternalId, OrgId};
use crate::money::Currency;
use chrono::{DateTime, Utc};
use rust_decimal::Decimal;

/// Where a payment came from; part of its identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    Monobank,
    Stripe,
    Standard,
    Manual,
    Assistant,
    Bank,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Monobank => "monobank",
            Self::Stripe => "stripe",
            Self::Standard => "standard",
            Self::Manual => "manual",
            Self::Assistant => "assistant",
            Self::Bank => "bank",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        [
            Self::Monobank,
            Self::Stripe,
            Self::Standard,
            Self::Manual,
            Self::Assistant,
            Self::Bank,
        ]
        .into_iter()
        .find(|s| s.as_str() == raw)
    }
}

/// One arrival of money (or of its reversal), parsed and verified at the edge.
#[derive(Clone, Debug)]
pub struct PaymentInput {
    pub org: OrgId,
    /// Our invoice id as the payer referenced it; `None` or unknown → stored as unmatched.
    pub invoice_ref: Option<String>,
    pub source: Source,
    pub external_id: ExternalId,
    /// Major units; `None` → apply what is still open.
    pub amount: Option<Decimal>,
    /// `None` → the invoice's currency.
    pub currency: Option<Currency>,
    pub at: DateTime<Utc>,
    pub actor: String,
    /// Canonical request digest: the same key with another payload is a conflict, not a retry.
    pub fingerprint: String,
    /// Set for a reversal: the external id of the payment it takes back.
    pub reverses: Option<ExternalId>,
}

impl PaymentInput {
    /// The event's key inside its organisation: `SOURCE:EXTERNAL_ID`.
    pub fn event_key(&self) -> String {
        format!("{}:{}", self.source.as_str(), self.external_id)
    }

    pub fn pk(&self) -> String {
        payment_pk(&self.org, self.source, &self.external_id)
    }
}

/// The key a reversal is booked under: its payment's id with `:reversal`.
pub fn reversal_id(original: &ExternalId) -> ExternalId {
    ExternalId::parse("external_id", &format!("{original}:reversal"))
        .unwrap_or_else(|_| ExternalId::of_body(format!("{original}:reversal").as_bytes()))
}

pub fn payment_pk(org: &OrgId, source: Source, external_id: &ExternalId) -> String {
    org.pk(&format!("PAYMENT#{}#{}", source.as_str(), external_id))
}
