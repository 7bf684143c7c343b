//! A ledger line: one debit per charged message, one refund when its failure wins, one top-up per
//! `Idempotency-Key`. Keyed by what it is for (message and kind, or the top-up's key), mapped to
//! and from its item here once. Amounts are positive; `kind` says the direction.

use super::{derived_id, ledger_list, message_part};
use crate::ids::{key_part, OrgId};
use crate::messages::Direction;
use crate::money::Currency;
use crate::store::item::{malformed, tag_name, Builder, Read};
use crate::store::{Item, StoreError};
use crate::time;
use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The list (in the operator's index) that finds a line by its `ledger_id`.
pub(super) fn by_id(org: &OrgId, ledger_id: &str) -> String {
    org.pk(&format!("LEDGER_LINE#{ledger_id}"))
}

pub const KIND: &str = "ledger_line";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LineKind {
    Debit,
    Refund,
    Topup,
}

impl LineKind {
    /// What the line does to the balance: a debit takes, a refund and a top-up give.
    pub fn signed(self, amount: Decimal) -> Decimal {
        match self {
            Self::Debit => -amount,
            Self::Refund | Self::Topup => amount,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LedgerLine {
    pub org: OrgId,
    pub ledger_id: String,
    pub kind: LineKind,
    pub amount: Decimal,
    pub currency: Currency,
    /// The event that booked it: the signed `webhook-id`, or a top-up's `Idempotency-Key`.
    pub event_id: String,
    pub integration_id: Option<String>,
    pub message_id: Option<String>,
    pub direction: Option<Direction>,
    pub inbox_id: Option<String>,
    pub at: DateTime<Utc>,
    /// Whether it moved the balance: a line in another currency than the wallet's is booked
    /// for finance and left to a person (`currency_mismatch`).
    pub applied: bool,
    /// The balance right after this line.
    pub balance_after: Decimal,
}

/// A message's debit or refund line: a message is its id and direction (a carrier may reuse
/// an id across directions; an incoming and an outgoing message are still two).
pub fn message_line_pk(
    org: &OrgId,
    integration_id: &str,
    message_id: &str,
    direction: Direction,
    kind: LineKind,
) -> String {
    let (direction, kind) = (tag_name(&direction), tag_name(&kind));
    org.pk(&format!(
        "LEDGER#{}#{direction}#{kind}",
        message_part(integration_id, message_id)
    ))
}

/// A top-up's line, by its `Idempotency-Key`.
pub fn topup_pk(org: &OrgId, key: &str) -> String {
    org.pk(&format!("LEDGER#topup#{}", key_part(key)))
}

/// The id a line under `pk` has.
pub fn ledger_id(pk: &str) -> String {
    derived_id("led_", pk)
}

impl LedgerLine {
    pub fn pk(&self) -> String {
        match (&self.integration_id, &self.message_id, self.direction) {
            (Some(integration), Some(message), Some(direction)) => {
                message_line_pk(&self.org, integration, message, direction, self.kind)
            }
            _ => topup_pk(&self.org, &self.event_id),
        }
    }

    pub fn to_item(&self) -> Item {
        Builder::new(&self.pk(), KIND, self.org.as_str())
            .str("ledger_id", &self.ledger_id)
            .tag("line_kind", &self.kind)
            .num("amount", self.amount)
            .str("currency", self.currency.as_str())
            .str("event_id", &self.event_id)
            .opt_str("integration_id", self.integration_id.clone())
            .opt_str("message_id", self.message_id.clone())
            .opt_str("direction", self.direction.as_ref().map(tag_name))
            .opt_str("inbox_id", self.inbox_id.clone())
            .time("at", self.at)
            .bool("applied", self.applied)
            .num("balance_after", self.balance_after)
            .list(&ledger_list(&self.org), &self.position())
            // Found by its id for a correction (`correction::find`).
            .index(&by_id(&self.org, &self.ledger_id), "line")
            .build()
    }

    /// Its place in the ledger's list: its time, then (one event's debit and its refund are
    /// written at one time) a debit or a top-up before a refund, then its id.
    fn position(&self) -> String {
        let order = match self.kind {
            LineKind::Debit | LineKind::Topup => 0,
            LineKind::Refund => 1,
        };
        format!("{}#{order}#{}", time::format(self.at), self.ledger_id)
    }

    pub fn from_item(item: &Item) -> Result<Self, StoreError> {
        let org = OrgId::parse(item.str_of("org")?).map_err(|_| malformed(item, "org"))?;
        let currency =
            Currency::parse(item.str_of("currency")?).map_err(|_| malformed(item, "currency"))?;
        Ok(Self {
            org,
            ledger_id: item.str_of("ledger_id")?.to_owned(),
            kind: item.tag_of("line_kind")?,
            amount: item.dec_of("amount")?,
            currency,
            event_id: item.str_of("event_id")?.to_owned(),
            integration_id: item.opt_str("integration_id").map(str::to_owned),
            message_id: item.opt_str("message_id").map(str::to_owned),
            direction: item
                .opt_str("direction")
                .map(|_| item.tag_of("direction"))
                .transpose()?,
            inbox_id: item.opt_str("inbox_id").map(str::to_owned),
            at: item.time_of("at")?,
            applied: item.bool_of("applied"),
            balance_after: item.dec_of("balance_after")?,
        })
    }

    /// What the line did to the balance (nothing when it was not applied).
    pub fn effect(&self) -> Decimal {
        if self.applied {
            self.kind.signed(self.amount)
        } else {
            Decimal::ZERO
        }
    }

    /// The export's columns, in order (`refunds` last: added after finance read the others).
    pub const COLUMNS: [&'static str; 9] = [
        "ledger_id",
        "event_id",
        "message_id",
        "inbox_id",
        "kind",
        "amount",
        "currency",
        "at",
        "refunds",
    ];

    /// A refund's: the ledger id of the debit it gives back, its message's debit line (the id
    /// is derived from that line's key, so it needs no read).
    pub fn refunds(&self) -> Option<String> {
        match (
            self.kind,
            &self.integration_id,
            &self.message_id,
            self.direction,
        ) {
            (LineKind::Refund, Some(integration), Some(message), Some(direction)) => {
                let debit = LineKind::Debit;
                Some(ledger_id(&message_line_pk(
                    &self.org,
                    integration,
                    message,
                    direction,
                    debit,
                )))
            }
            _ => None,
        }
    }

    /// The line as the export and the answers show it: the [`Self::COLUMNS`], then what else
    /// finance may ask.
    pub fn view(&self) -> LedgerLineView {
        LedgerLineView {
            ledger_id: self.ledger_id.clone(),
            event_id: self.event_id.clone(),
            message_id: self.message_id.clone(),
            inbox_id: self.inbox_id.clone(),
            kind: self.kind,
            amount: self.currency.show(self.amount),
            currency: self.currency.as_str(),
            at: time::format(self.at),
            integration_id: self.integration_id.clone(),
            direction: self.direction,
            applied: self.applied,
            balance_after: self.currency.show(self.balance_after),
            refunds: self.refunds(),
        }
    }

    pub fn to_json(&self) -> Value {
        serde_json::to_value(self.view()).expect("a ledger line's view serialises")
    }
}

/// A ledger line as the export and every answer show it (`LedgerItem` in the OpenAPI document):
/// `amount` is positive, `kind` says the direction of the money.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
#[schema(as = LedgerItem)]
pub struct LedgerLineView {
    pub ledger_id: String,
    /// The signed `webhook-id` that booked it, or a top-up's `Idempotency-Key`.
    pub event_id: String,
    pub message_id: Option<String>,
    pub inbox_id: Option<String>,
    pub kind: LineKind,
    pub amount: String,
    pub currency: &'static str,
    /// When it was booked (RFC 3339, UTC).
    #[schema(format = DateTime)]
    pub at: String,
    pub integration_id: Option<String>,
    /// `outbound` or `inbound`: the message's direction, for an SMS line.
    #[schema(value_type = Option<String>)]
    pub direction: Option<Direction>,
    /// False for a line in another currency than the wallet's (`currency_mismatch`).
    pub applied: bool,
    pub balance_after: String,
    /// A refund's: the ledger id of the debit it gives back.
    pub refunds: Option<String>,
}
