//! The stored payment event: what arrived, what it did, and the first answer to its request.

use super::invoice::at_str;
use super::Source;
use crate::ids::{ExternalId, OrgId};
use crate::money;
use crate::store::item::Read;
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
