//! The shapes of the ledger's answers, for the OpenAPI document only (the handlers build them
//! with `json!` in `firmspace::ledger`; the integration tests hold them to the real output).

use serde::Serialize;
use utoipa::ToSchema;

#[derive(Serialize, ToSchema)]
pub struct Wallet {
    /// Major units; negative when SMS already sent cost more than was topped up.
    #[schema(example = "12.35")]
    balance: String,
    /// Set by the first top-up; null before.
    #[schema(example = "USD")]
    currency: Option<String>,
    /// Moves with every change of the balance.
    version: u64,
}

#[derive(Serialize, ToSchema)]
pub struct TopUpAnswer {
    /// True on a repeat of the same key and body: the stored answer.
    duplicate: bool,
    #[schema(example = "led_0123456789abcdef0123")]
    ledger_id: String,
    wallet: Wallet,
}

pub use firmspace::ledger::line::LedgerLineView as LedgerItem;

#[derive(Serialize, ToSchema)]
pub struct InboxItem {
    inbox_id: String,
    message_id: String,
    /// `inbound` or `outbound`.
    direction: String,
    from: String,
    to: String,
    text: String,
    /// `sent`, `delivered`, `failed` (outbound) or `received` (inbound).
    status: String,
    /// Every event that wrote to the line.
    event_ids: Vec<String>,
    at: String,
    integration_id: String,
    segments: Option<u32>,
}

/// A carrier event: `sms.sent`, `sms.received`, `sms.delivered` or `sms.failed`; other types are
/// answered `ignored`.
#[derive(Serialize, ToSchema)]
pub struct SmsPayload {
    #[serde(rename = "type")]
    #[schema(example = "sms.sent")]
    kind: String,
    data: SmsData,
}

#[derive(Serialize, ToSchema)]
pub struct SmsData {
    /// The carrier's message id (1-255 bytes, no white space or `#`): what lines are keyed by.
    message_id: String,
    /// 1-128 bytes.
    from: String,
    to: String,
    /// At most 1600 characters.
    text: Option<String>,
    /// 1 to 255.
    segments: Option<u32>,
    /// Major units, at most 1000; "0" is no charge. Requires `currency`.
    #[schema(example = "0.05")]
    price: Option<String>,
    currency: Option<String>,
}

/// The answer to an event, stored with it: a repeat of the event id gets it again, and a
/// re-push of the message under a new event id names the same lines; both `duplicate: true`.
#[derive(Serialize, ToSchema)]
pub struct SmsAnswer {
    /// The event id (`webhook-id`).
    ack: String,
    duplicate: bool,
    ledger_id: Option<String>,
    inbox_id: String,
    /// The wallet's balance after the event.
    balance: String,
    message_id: String,
    #[serde(rename = "type")]
    kind: String,
    /// The inbox line's status after the event.
    status: String,
    /// Review items filed: `negative_balance`, `currency_mismatch`, `missing_price`,
    /// `status_conflict`.
    review: Option<Vec<String>>,
}

/// A debit line given back: the refund line, the line it refunds, and the wallet after it.
#[derive(Serialize, ToSchema)]
pub struct RefundAnswer {
    /// True when the line was given back before (by a person, or by the message's failure).
    duplicate: bool,
    /// The refund line's id.
    ledger_id: String,
    /// The debit line it gives back.
    refunds: String,
    amount: String,
    currency: String,
    /// False when the debit never moved the balance (another currency): neither does its refund.
    applied: bool,
    reason: String,
    wallet: Wallet,
}
