//! The stored payment event: what arrived, what it did, and the first answer to its request.

use super::invoice::{at_str, payments_list_pk, Invoice};
use super::rules::Decision;
use super::{PaymentInput, Source};
use crate::ids::{ExternalId, OrgId};
use crate::money;
use crate::review::ReviewItem;
use crate::store::item::{b, Builder, Read};
use crate::store::{Item, StoreError};
use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde_json::{json, Value};

#[derive(Clone, Debug, PartialEq)]
pub struct PaymentRecord {
    pub org: OrgId,
    pub source: Source,
    pub external_id: ExternalId,
    pub invoice_id: Option<String>,
    pub currency: Option<String>,
    pub received: Option<Decimal>,
    pub applied: Decimal,
    pub unapplied: Decimal,
    pub outcome: String,
    pub at: DateTime<Utc>,
    pub actor: String,
    pub fingerprint: String,
    /// The first answer, returned again to a retry of the same request.
    pub answer: Value,
}

impl PaymentRecord {
    pub fn key(&self) -> String {
        format!("{}:{}", self.source.as_str(), self.external_id)
    }

    pub fn to_json(&self) -> Value {
        json!({
            "source": self.source.as_str(),
            "external_id": self.external_id.as_str(),
            "received": self.received.map(money::display),
            "applied": money::display(self.applied),
            "unapplied": money::display(self.unapplied),
            "currency": self.currency,
            "outcome": self.outcome,
            "at": at_str(self.at),
        })
    }

    pub fn from_item(item: &Item) -> Result<Self, StoreError> {
        let bad = |detail: String| StoreError::Malformed {
            pk: item.opt_str("pk").unwrap_or_default().to_owned(),
            detail,
        };
        Ok(Self {
            org: OrgId::parse(item.str_of("org")?).map_err(|e| bad(e.to_string()))?,
            source: Source::parse(item.str_of("source")?).ok_or_else(|| bad("source".into()))?,
            external_id: ExternalId::parse("external_id", item.str_of("external_id")?)
                .map_err(|e| bad(e.to_string()))?,
            invoice_id: item.opt_str("invoice_id").map(str::to_owned),
            currency: item.opt_str("currency").map(str::to_owned),
            received: item.opt_dec("received"),
            applied: item.dec_of("applied")?,
            unapplied: item.dec_of("unapplied")?,
            outcome: item.str_of("outcome")?.to_owned(),
            at: item.str_of("at")?.parse().map_err(|_| bad("at".into()))?,
            actor: item.opt_str("actor").unwrap_or_default().to_owned(),
            fingerprint: item.opt_str("fingerprint").unwrap_or_default().to_owned(),
            answer: item
                .opt_str("answer")
                .and_then(|a| serde_json::from_str(a).ok())
                .unwrap_or(Value::Null),
        })
    }
}

/// The event item. It carries the invoice's links and state after the payment, so its
/// consequences are derived from this item alone.
pub(super) fn event_item(
    input: &PaymentInput,
    decision: &Decision,
    before: Option<&Invoice>,
    after: Option<&Invoice>,
    answer: &Value,
) -> Item {
    let invoice_id = before
        .map(|i| i.id.as_str().to_owned())
        .or_else(|| input.invoice_ref.clone());
    let list = match &invoice_id {
        Some(id) if before.is_some() => payments_list_pk(&input.org, id),
        _ => input.org.pk("PAYMENTS#UNMATCHED"),
    };
    let currency = input
        .currency
        .as_ref()
        .or(before.map(|i| &i.currency))
        .map(|c| c.as_str().to_owned());
    let mut builder = Builder::new(&input.pk(), "payment_event", input.org.as_str())
        .str("event_key", input.event_key())
        .str("source", input.source.as_str())
        .str("external_id", input.external_id.as_str())
        .opt_str("invoice_id", invoice_id)
        .opt_str("currency", currency)
        .num("applied", decision.applied)
        .num("unapplied", decision.unapplied)
        .str("outcome", decision.outcome.as_str())
        .str("at", at_str(input.at))
        .str("actor", &input.actor)
        .str("fingerprint", &input.fingerprint)
        .str("answer", answer.to_string())
        .opt_str(
            "reverses",
            input.reverses.as_ref().map(|r| r.as_str().to_owned()),
        )
        .list(
            &list,
            &format!("{}#{}", at_str(input.at), input.event_key()),
        );
    if let Some(received) = decision.received {
        builder = builder.num("received", received);
    }
    if let (Some(before), Some(after)) = (before, after) {
        let links = &before.links;
        builder = builder
            .str("invoice_number", &before.number)
            .str("invoice_status", after.status.as_str())
            .num("invoice_paid", after.paid)
            .num("invoice_gross", after.gross)
            .set(
                "closed_invoice",
                b(!before.status.is_closed() && after.status.is_closed()),
            )
            .opt_str("owner", links.owner.clone())
            .opt_str("contact_id", links.contact_id.clone())
            .opt_str("deal_id", links.deal_id.clone())
            .opt_str("company_id", links.company_id.clone());
    }
    builder.build()
}

pub(super) fn review_for(input: &PaymentInput, decision: &Decision) -> Option<ReviewItem> {
    let reason = decision.outcome.review_reason()?;
    Some(ReviewItem {
        org: input.org.clone(),
        kind: "payment".into(),
        reason: reason.into(),
        key: input.event_key(),
        at: input.at,
        detail: json!({
            "invoice_id": input.invoice_ref,
            "received": decision.received.map(money::display),
            "unapplied": money::display(decision.unapplied),
            "currency": input.currency.as_ref().map(|c| c.as_str()),
        }),
    })
}

pub(super) fn answer(decision: &Decision, invoice: Option<&Invoice>) -> Value {
    json!({
        "duplicate": false,
        "applied": money::display(decision.applied),
        "outcome": decision.outcome.as_str(),
        "invoice": invoice.map(Invoice::to_json),
    })
}
