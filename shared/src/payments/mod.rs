//! Money: one `register_payment` that every path to money ends in (webhook, manual button,
//! assistant, bank reconciliation).

mod confirm;
pub mod consequences;
pub mod credit;
pub mod detail;
pub mod event;
pub mod invoice;
pub mod providers;
pub mod recover;
pub mod register;
pub mod rules;

pub use event::PaymentEvent;
pub use invoice::{Invoice, InvoiceStatus, NewInvoice};
pub use register::{
    on_its_payments_invoice, register_confirmed, register_linked, register_payment, registering,
    Confirm, Confirmation, Link, PaymentError, Registered, Trusted,
};
pub use rules::{decide, Decision, Outcome, Related};

use crate::ids::{EventKey, ExternalId, IntegrationId, OrgId};
use crate::money::Currency;
use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use sha2::{Digest, Sha256};
use std::fmt;

/// Where a payment came from; part of its identity. Stripe's and monobank's ids are global to
/// the provider account, so two endpoints of one account still book once; a generic Standard
/// Webhooks sender's ids are unique only within that sender, so its payments are keyed by the
/// integration.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    Monobank,
    Stripe,
    Integration(IntegrationId),
    Manual,
    Assistant,
    Bank,
}

const NAMED: [(&str, Source); 5] = [
    ("monobank", Source::Monobank),
    ("stripe", Source::Stripe),
    ("manual", Source::Manual),
    ("assistant", Source::Assistant),
    ("bank", Source::Bank),
];

impl Source {
    /// How a person calls it: the provider, or `standard` for a Standard Webhooks sender.
    pub fn label(&self) -> &str {
        match self {
            Self::Integration(_) => "standard",
            named => NAMED
                .iter()
                .find(|(_, s)| s == named)
                .map_or("", |(n, _)| n),
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        NAMED
            .iter()
            .find(|(name, _)| *name == raw)
            .map(|(_, s)| s.clone())
            .or_else(|| IntegrationId::parse(raw).ok().map(Self::Integration))
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Integration(id) => f.write_str(&id.id),
            named => f.write_str(named.label()),
        }
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
    /// Set for a reversal: the external id of the payment it takes back.
    pub reverses: Option<ExternalId>,
    /// Whether this source also reverses payments (monobank): a payment then checks that its
    /// reversal has not come first, in the same transaction that books it.
    pub reversible: bool,
    /// The integration it came through (a webhook's); `None` for the button, the assistant and
    /// the bank. Not part of its identity: what a paused integration holds back.
    pub via: Option<String>,
}

impl PaymentInput {
    /// `payment:SOURCE:EXTERNAL_ID`, the event's one key inside its organisation.
    pub fn event_key(&self) -> EventKey {
        event_key(&self.source, &self.external_id)
    }

    pub fn pk(&self) -> String {
        payment_pk(&self.org, &self.source, &self.external_id)
    }

    /// The payment a reversal takes back, or the reversal a reversible payment must not follow.
    pub fn related_pk(&self) -> Option<String> {
        match &self.reverses {
            Some(original) => Some(payment_pk(&self.org, &self.source, original)),
            None if self.reversible => Some(payment_pk(
                &self.org,
                &self.source,
                &reversal_id(&self.external_id),
            )),
            None => None,
        }
    }

    /// What the payment says, canonically: the same key with another fingerprint is another
    /// request (another invoice, amount or currency), not a retry.
    pub fn fingerprint(&self) -> String {
        let canonical = format!(
            "{}|{}|{}|{}",
            self.invoice_ref.as_deref().unwrap_or_default(),
            self.amount
                .map(|a| a.normalize().to_string())
                .unwrap_or_default(),
            self.currency
                .as_ref()
                .map(Currency::as_str)
                .unwrap_or_default(),
            self.reverses
                .as_ref()
                .map(ExternalId::as_str)
                .unwrap_or_default(),
        );
        hex::encode(Sha256::digest(canonical))[..32].to_owned()
    }
}

pub fn event_key(source: &Source, external_id: &ExternalId) -> EventKey {
    EventKey::new("payment", &format!("{source}:{external_id}"))
}

/// The key a reversal is booked under: its payment's id with `:reversal`.
pub fn reversal_id(original: &ExternalId) -> ExternalId {
    ExternalId::parse("external_id", &format!("{original}:reversal"))
        .unwrap_or_else(|_| ExternalId::of_body(format!("{original}:reversal").as_bytes()))
}

pub fn payment_pk(org: &OrgId, source: &Source, external_id: &ExternalId) -> String {
    org.pk(&format!("PAYMENT#{source}#{external_id}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_print_and_parse_back() {
        let org = OrgId::generate();
        let integration = IntegrationId::generate(&org);
        for source in [
            Source::Stripe,
            Source::Manual,
            Source::Integration(integration),
        ] {
            assert_eq!(Source::parse(&source.to_string()), Some(source));
        }
        assert_eq!(Source::parse("standard"), None);
    }
}
