//! The prepaid ledger: an SMS carrier's signed events, the wallet they are paid from, the
//! ledger lines finance exports and the inbox lines support reads.
//!
//! Two identities, each with its own job: the event id (the signed `webhook-id`) names a
//! delivery and keys its stored acknowledgement, so the same event again is answered from it;
//! the carrier's `message_id` keys what the event writes (the debit, the refund, one inbox line
//! per direction), so a re-push under a new event id finds the lines already there and writes
//! nothing. Each event is one transaction: its acknowledgement, its lines, the wallet
//! (conditioned on its version), and for an incoming SMS its conversation message.

mod ack;
pub mod correction;
pub mod decide;
pub mod export;
pub mod held;
pub mod inbox;
pub mod line;
pub mod parse;
pub mod providers;
mod record;
pub mod topup;
pub mod wallet;

pub use decide::{decide, Plan, Seen};
pub use inbox::{InboxLine, InboxStatus};
pub use line::{LedgerLine, LineKind};
pub use record::{record, release, Ack, Acked, Recorded, ACK_KIND, HELD};
pub use topup::{top_up, TopUp};
pub use wallet::Wallet;

use crate::ids::{key_part, EventKey, OrgId};
use crate::messages::Direction;
use crate::money::Currency;
use crate::store::StoreError;
use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use sha2::{Digest, Sha256};
use thiserror::Error;

/// The kind in an SMS event's key (`sms:{integration}:{event id}`).
pub const EVENT_KIND: &str = "sms";
/// The most one SMS may cost, in major units: a price above it is not an SMS price.
pub const PRICE_MAX: u32 = 1_000;
/// The most one top-up may add, in major units.
pub const TOPUP_MAX: u32 = 1_000_000;
/// The longest SMS text we keep, in characters (a carrier's concatenated maximum).
pub const TEXT_MAX: usize = 1_600;
/// Segments of one SMS.
pub const SEGMENTS_MAX: u32 = 255;

/// What the carrier reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum SmsType {
    #[serde(rename = "sms.sent")]
    Sent,
    #[serde(rename = "sms.received")]
    Received,
    #[serde(rename = "sms.delivered")]
    Delivered,
    #[serde(rename = "sms.failed")]
    Failed,
}

impl SmsType {
    /// The inbox line an event of this type writes: only `sms.received` is inbound.
    pub fn direction(self) -> Direction {
        match self {
            Self::Received => Direction::Inbound,
            _ => Direction::Outbound,
        }
    }
}

/// A price: positive, within [`PRICE_MAX`], with at most four fraction digits (a carrier's
/// fractions of a cent kept as they are).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Price {
    pub amount: Decimal,
    pub currency: Currency,
}

/// One verified carrier event, every field within its limit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SmsEvent {
    pub integration_id: String,
    /// The signed `webhook-id`.
    pub event_id: String,
    pub kind: SmsType,
    pub message_id: String,
    pub from: String,
    pub to: String,
    pub text: Option<String>,
    pub segments: Option<u32>,
    /// `None`: the carrier did not price it (or priced it 0).
    pub price: Option<Price>,
    /// Whether the carrier priced it 0: no charge, and nothing for a person to price.
    pub free: bool,
    /// The signed timestamp.
    pub at: DateTime<Utc>,
    /// What the body says: the same event id with other content is another report.
    pub fingerprint: String,
}

impl SmsEvent {
    /// `sms:{integration}:{event id}`.
    pub fn key(&self) -> EventKey {
        EventKey::new(
            EVENT_KIND,
            &format!("{}:{}", self.integration_id, self.event_id),
        )
    }
}

/// Why a ledger write did not happen.
#[derive(Debug, Error)]
pub enum LedgerError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the wallet is in {wallet}, not {given}")]
    CurrencyMismatch { wallet: Currency, given: Currency },
    /// A release of an event that was never held (no acknowledgement is stored).
    #[error("the event was never held")]
    NotHeld,
}

impl LedgerError {
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Store(e) => e.is_retryable(),
            Self::CurrencyMismatch { .. } | Self::NotHeld => false,
        }
    }
}

/// A stable id from a key: the same line or inbox row always gets the same id, so concurrent
/// writers agree on it before either has written.
fn derived_id(prefix: &str, pk: &str) -> String {
    format!("{prefix}{}", &hex::encode(Sha256::digest(pk))[..20])
}

fn message_part(integration_id: &str, message_id: &str) -> String {
    format!("{integration_id}#{}", key_part(message_id))
}

/// The list every ledger line is on, in booking order.
pub(crate) fn ledger_list(org: &OrgId) -> String {
    org.pk("LEDGER")
}

/// The list every inbox line is on, newest first.
pub(crate) fn inbox_list(org: &OrgId) -> String {
    org.pk("INBOX")
}
