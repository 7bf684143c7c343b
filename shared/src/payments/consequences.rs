//! What a stored payment implies for people and rules, in the words a person reads.

use super::event::{InvoiceAfter, PaymentEvent};
use super::Outcome;
use crate::consequences::{Consequence, Fired, Lookalike, Notification, Trigger, Unkeep};
use crate::ids::EventKey;
use crate::money;
use crate::store::item::tag_name;
use serde_json::json;

impl PaymentEvent {
    /// What its consequences are keyed by: the payment's own key, except for a bank row's
    /// payment, which is keyed by (row, invoice): a row re-matched back to an invoice tells
    /// nobody again what it told when it was first matched there.
    fn told_as(&self) -> EventKey {
        match self.source {
            super::Source::Bank => {
                let row = self
                    .external_id
                    .as_str()
                    .split(':')
                    .next()
                    .unwrap_or_default();
                let invoice = self.invoice_id.as_deref().unwrap_or_default();
                let reversed = if self.reverses.is_some() {
                    ":reversal"
                } else {
                    ""
                };
                EventKey::new("payment", &format!("bank:{row}:{invoice}{reversed}"))
            }
            _ => self.key(),
        }
    }

    /// What this payment tells people and rules: an activity line on each linked record, one
    /// notification (the owner, or the team), and `invoice.paid` when it closed the invoice.
    /// Unmatched money has no invoice to tell anyone about; its review item is the consequence.
    pub fn consequences(&self) -> Vec<Consequence> {
        let unkeep = self.unkeep().map(Consequence::from);
        let Some(invoice) = &self.invoice else {
            return unkeep.into_iter().collect();
        };
        let text = self.text(invoice);
        let mut out = self.activity_lines(invoice, &text);
        out.push(
            Notification {
                org: self.org.clone(),
                key: self.told_as(),
                recipient: invoice.links.owner.clone(),
                text,
                at: self.at,
            }
            .into(),
        );
        if invoice.closed_now {
            out.push(self.invoice_paid(invoice).into());
        }
        out.extend(self.lookalike(invoice).map(Consequence::from));
        out.extend(unkeep);
        out
    }

    /// A reversal: the money its payment kept, where a person put it on an invoice, follows.
    fn unkeep(&self) -> Option<Unkeep> {
        let original = self.reverses.as_ref()?;
        Some(Unkeep {
            org: self.org.clone(),
            reversed: super::event_key(&self.source, original),
            at: self.at,
        })
    }

    /// The money received and its currency, as shown: what a lookalike is found by. None for
    /// a reversal or a payment that named no money.
    fn money(&self) -> Option<(String, String)> {
        if self.reverses.is_some() || matches!(self.outcome, Outcome::Reversed) {
            return None;
        }
        let currency = self.currency?;
        let received = self.received.unwrap_or(self.applied);
        (received > rust_decimal::Decimal::ZERO).then(|| {
            (
                money::shown(received, Some(currency)),
                currency.as_str().to_owned(),
            )
        })
    }

    /// A payment's activity line carries its money and its key.
    fn money_line(&self) -> Option<(String, String, String)> {
        let (amount, currency) = self.money()?;
        Some((amount, currency, self.key().as_str().to_owned()))
    }

    /// The check of a booked payment against the money that reached its invoice or contact
    /// within a week of it, either way.
    fn lookalike(&self, invoice: &InvoiceAfter) -> Option<Lookalike> {
        let (amount, currency) = self.money()?;
        Some(Lookalike {
            org: self.org.clone(),
            event_key: self.key(),
            invoice_id: self.invoice_id.clone()?,
            invoice_number: invoice.number.clone(),
            contact_id: invoice.links.contact_id.clone(),
            amount,
            currency,
            at: self.at,
        })
    }

    fn text(&self, invoice: &InvoiceAfter) -> String {
        let currency = self.currency.as_ref().map_or("", |c| c.as_str());
        let status = tag_name(&invoice.status);
        match self.outcome {
            Outcome::Reversed => format!(
                "Payment of {} {currency} for {} was reversed; invoice is {status}",
                money::shown(-self.applied, self.currency),
                invoice.number
            ),
            _ => format!(
                "Payment for {} via {}: {} {currency} received, {} applied; invoice is {status}",
                invoice.number,
                self.source.label(),
                money::shown(self.received.unwrap_or(self.applied), self.currency),
                money::shown(self.applied, self.currency)
            ),
        }
    }

    /// One line per linked contact, deal and company, keyed `invoice:SOURCE:EXTERNAL_ID`.
    fn activity_lines(&self, invoice: &InvoiceAfter, text: &str) -> Vec<Consequence> {
        let key = format!("invoice:{}", self.told_as().id());
        invoice.links.activity(
            &self.org,
            &key,
            ("payment", self.money_line()),
            text,
            self.at,
        )
    }

    /// `invoice.paid`, keyed by the invoice (`invoice:INVOICE_ID:paid`), not by the payment: an
    /// invoice paid, reversed and paid again runs each rule once.
    fn invoice_paid(&self, invoice: &InvoiceAfter) -> Fired {
        let invoice_id = self.invoice_id.as_deref().unwrap_or_default();
        Fired {
            org: self.org.clone(),
            trigger: Trigger::InvoicePaid,
            event_key: EventKey::new("invoice", &format!("{invoice_id}:paid")),
            at: self.at,
            context: json!({
                "payment_key": self.told_as(),
                "invoice_id": self.invoice_id,
                "invoice_number": invoice.number,
                "contact_id": invoice.links.contact_id,
                "owner": invoice.links.owner,
            }),
        }
    }
}
