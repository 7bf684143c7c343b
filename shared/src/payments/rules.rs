//! What a payment does to an invoice, decided from values alone.

use super::invoice::{Invoice, InvoiceStatus};
use super::PaymentInput;
use crate::review::Reason;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Applied,
    /// More arrived than was open: the excess stays on the event as unapplied.
    Overpaid,
    /// The invoice was already paid: stored, applied 0.
    InvoiceClosed,
    /// The invoice was voided: it takes no payment; stored, applied 0, for a person.
    InvoiceVoid,
    CurrencyMismatch,
    /// No invoice with that id: stored as unmatched.
    Unmatched,
    Reversed,
    /// A reversal for a payment we never booked (or that applied nothing).
    ReversalUnmatched,
    /// The payment arrived after its own reversal (providers do not keep order): applied 0.
    ReversedBeforePayment,
    /// The provider, asked with the merchant's own credentials, does not confirm the payment as
    /// this merchant's (a genuine signature proves the sender, not the merchant): applied 0.
    Unconfirmed,
}

/// What is already stored about a payment's counterpart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Related {
    Nothing,
    /// For a reversal: what the original payment applied.
    Original {
        applied: Decimal,
    },
    /// For a payment: its reversal is already stored.
    Reversal,
}

impl Outcome {
    /// Outcomes a person has to look at.
    pub fn review_reason(self) -> Option<Reason> {
        match self {
            Self::Applied | Self::Reversed => None,
            Self::Overpaid => Some(Reason::Overpayment),
            Self::InvoiceClosed => Some(Reason::InvoiceClosed),
            Self::InvoiceVoid => Some(Reason::InvoiceVoid),
            Self::CurrencyMismatch => Some(Reason::CurrencyMismatch),
            Self::Unmatched => Some(Reason::UnknownInvoice),
            Self::ReversalUnmatched => Some(Reason::ReversalWithoutPayment),
            Self::ReversedBeforePayment => Some(Reason::ReversedBeforePayment),
            Self::Unconfirmed => Some(Reason::UnconfirmedPayment),
        }
    }
}

/// The invoice after the payment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Change {
    pub paid: Decimal,
    pub status: InvoiceStatus,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    pub outcome: Outcome,
    /// What arrived (negative for a reversal); `None` when neither the payload nor the invoice says.
    pub received: Option<Decimal>,
    /// What moved the balance (negative for a reversal).
    pub applied: Decimal,
    pub unapplied: Decimal,
    pub change: Option<Change>,
}

impl Decision {
    fn nothing(outcome: Outcome, received: Option<Decimal>) -> Self {
        Self {
            outcome,
            received,
            applied: Decimal::ZERO,
            unapplied: received.unwrap_or_default(),
            change: None,
        }
    }
}

/// A payment its provider did not confirm: stored, nothing applied, for a person to look at.
pub fn unconfirmed(input: &PaymentInput) -> Decision {
    Decision::nothing(Outcome::Unconfirmed, input.amount)
}

/// Status that follows from a paid amount.
pub fn status_for(paid: Decimal, gross: Decimal) -> InvoiceStatus {
    if paid >= gross {
        InvoiceStatus::Paid
    } else if paid > Decimal::ZERO {
        InvoiceStatus::PartiallyPaid
    } else {
        InvoiceStatus::Open
    }
}

/// Decides a payment, given the invoice and what is stored about its counterpart.
pub fn decide(invoice: Option<&Invoice>, input: &PaymentInput, related: Related) -> Decision {
    let Some(invoice) = invoice else {
        return match input.reverses {
            // Money going back is negative, whatever sign the provider wrote.
            Some(_) => {
                Decision::nothing(Outcome::ReversalUnmatched, input.amount.map(|a| -a.abs()))
            }
            None => Decision::nothing(Outcome::Unmatched, input.amount),
        };
    };
    if input.reverses.is_some() {
        let original = match related {
            Related::Original { applied } => Some(applied),
            _ => None,
        };
        return decide_reversal(invoice, original);
    }
    if related == Related::Reversal {
        return Decision::nothing(Outcome::ReversedBeforePayment, input.amount);
    }
    if invoice.status == InvoiceStatus::Void {
        return Decision::nothing(Outcome::InvoiceVoid, input.amount);
    }
    if invoice.status.is_closed() {
        return Decision::nothing(Outcome::InvoiceClosed, input.amount);
    }
    // Another currency, or an amount the invoice's currency cannot hold (40.5 for a JPY
    // invoice when the payload named no currency): nothing is rounded, a person looks.
    let foreign = input.currency.is_some_and(|c| c != invoice.currency);
    let inexact = input
        .amount
        .is_some_and(|a| invoice.currency.check(a).is_err());
    if foreign || inexact {
        return Decision::nothing(Outcome::CurrencyMismatch, input.amount);
    }
    let open = invoice.open();
    let received = input.amount.unwrap_or(open);
    let applied = received.min(open);
    let unapplied = received - applied;
    let paid = invoice.paid + applied;
    Decision {
        outcome: if unapplied > Decimal::ZERO {
            Outcome::Overpaid
        } else {
            Outcome::Applied
        },
        received: Some(received),
        applied,
        unapplied,
        change: Some(Change {
            paid,
            status: status_for(paid, invoice.net()),
        }),
    }
}

fn decide_reversal(invoice: &Invoice, reversed_applied: Option<Decimal>) -> Decision {
    let taken_back = reversed_applied.unwrap_or_default().min(invoice.paid);
    if taken_back <= Decimal::ZERO || invoice.status == InvoiceStatus::Void {
        return Decision::nothing(Outcome::ReversalUnmatched, reversed_applied.map(|a| -a));
    }
    let paid = invoice.paid - taken_back;
    Decision {
        outcome: Outcome::Reversed,
        received: Some(-taken_back),
        applied: -taken_back,
        unapplied: Decimal::ZERO,
        change: Some(Change {
            paid,
            status: status_for(paid, invoice.net()),
        }),
    }
}

#[cfg(test)]
mod tests;
