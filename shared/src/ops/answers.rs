//! The answers of the `/ops` routes: the types the ops function serialises and the OpenAPI
//! document describes, so the two cannot drift. A list answers `{"items": [...], "cursor"}`.

use crate::review::ReviewView;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use utoipa::ToSchema;

/// One kind's figures: stored today (UTC) and in the last 7 days, how many still miss a
/// consequence, and when the oldest of those was listed.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct Counts {
    pub today: u64,
    pub week: u64,
    pub waiting: u64,
    #[schema(format = DateTime)]
    pub oldest_waiting_at: Option<String>,
    /// What an event of the kind cost today: the units, SQS requests and invocations the
    /// day's events of the kind and their consequences spent, divided by the day's events
    /// (`store::spent`; a meter that trails by up to 10 s per warm function).
    pub units: PerEvent,
}

/// What an event cost on average: DynamoDB's write and read units (the indexes' included),
/// SQS requests and function invocations. Zeros when no event of the kind came.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct PerEvent {
    pub write: f64,
    pub read: f64,
    pub sqs: f64,
    pub invocations: f64,
}

impl PerEvent {
    /// A day's figures divided by its `events`, to two decimals.
    pub fn of(day: &crate::store::spent::Day, events: u64) -> Self {
        if events == 0 {
            return Self::default();
        }
        let per = |v: f64| (v / events as f64 * 100.0).round() / 100.0;
        Self {
            write: per(day.write),
            read: per(day.read),
            sqs: per(day.sqs),
            invocations: per(day.invocations),
        }
    }
}

/// `GET /ops/summary`: per kind, events stored today and in 7 days and still waiting; the
/// queues (the admin only); open review items; runs to check.
#[derive(Debug, Serialize, ToSchema)]
pub struct Summary {
    /// By kind: `payment`, `message`, `call`, `bank_row`, `sms`, `lead`, `credit_note`.
    pub events: BTreeMap<&'static str, Counts>,
    /// By queue; null for an organisation's key.
    pub queues: Option<BTreeMap<&'static str, QueueDepth>>,
    pub review: ReviewFigures,
    pub runs: RunFigures,
    /// Organisations counted (1 for an organisation's key).
    pub orgs: u64,
    #[schema(format = DateTime)]
    pub at: String,
}

/// A queue's messages: waiting, taken by a worker now, and in its DLQ (SQS's approximations).
#[derive(Debug, Serialize, ToSchema)]
pub struct QueueDepth {
    pub waiting: u64,
    pub in_flight: u64,
    pub dead: u64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ReviewFigures {
    pub open: u64,
    pub by_reason: BTreeMap<String, u64>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RunFigures {
    pub needs_check: u64,
    pub failed: u64,
}

/// An organisation the caller may look at.
#[derive(Debug, Serialize, ToSchema)]
pub struct OrgRow {
    pub id: String,
    pub name: String,
}

/// An event as the list shows it, with each consequence it implies.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventRow {
    /// What the replay route takes.
    pub id: String,
    pub org: Option<String>,
    pub key: String,
    #[schema(value_type = crate::store::lists::EventKind)]
    pub kind: &'static str,
    #[schema(format = DateTime)]
    pub at: String,
    /// The event in a line a person recognises.
    pub summary: String,
    /// `stored`, `review`, `held`, ...
    #[schema(value_type = EventOutcome)]
    pub outcome: String,
    pub consequences: Vec<ConsequenceState>,
}

/// What became of an event as it was stored (the document's closed set of `EventRow.outcome`):
/// a payment's outcome, or any other event's.
#[derive(ToSchema)]
#[serde(untagged)]
#[allow(dead_code)] // A document's type: the row carries the stored text.
pub enum EventOutcome {
    Payment(crate::payments::Outcome),
    Other(StoredOutcome),
}

/// An event's outcome other than a payment's: `stored`, or an SMS event's.
#[derive(ToSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
pub enum StoredOutcome {
    Stored,
    Repush,
    Review,
    Held,
}

/// A consequence an event implies, and whether it happened.
#[derive(Debug, Serialize, ToSchema)]
pub struct ConsequenceState {
    /// `notification`, `activity` or `rule_run`.
    #[schema(value_type = ConsequenceKind)]
    pub kind: &'static str,
    pub key: String,
    /// `done` or `missing`.
    #[schema(value_type = ConsequenceDone)]
    pub state: &'static str,
}

/// The kinds of consequence an event's row shows (a document's type).
#[derive(ToSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
pub enum ConsequenceKind {
    Notification,
    Activity,
    RuleRun,
}

/// Whether a consequence happened (a document's type).
#[derive(ToSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
pub enum ConsequenceDone {
    Done,
    Missing,
}

/// A dry run of a bulk replay: the window's events, and their consequences not done (the
/// list's `missing`). With `more`, these are the figures of the part counted in this call: call
/// again with `cursor` and add.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReplayCounted {
    pub events: u64,
    pub missing: u64,
    pub dry_run: bool,
    /// The count ran out of time before the window's end: call again with `cursor`.
    pub more: bool,
    pub cursor: Option<String>,
}

/// One call of a bulk replay: what it sent, and where the next call goes on.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReplaySent {
    /// Events whose missing consequences this call sent.
    pub events: u64,
    /// Consequences sent now.
    pub sent: u64,
    /// The window is not done: call again with `cursor`.
    pub more: bool,
    pub cursor: Option<String>,
}

/// One call of a bulk replay: a dry run's counts, or what it sent.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum Replayed {
    Counted(ReplayCounted),
    Sent(ReplaySent),
}

/// A review item as the operator's list shows it, with its id and organisation.
#[derive(Debug, Serialize, ToSchema)]
pub struct OpsReviewItem {
    /// What the resolve route takes.
    pub id: String,
    pub org: Option<String>,
    #[serde(flatten)]
    pub item: ReviewView,
}

/// An automation run.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunRow {
    /// What the decide route takes.
    pub id: String,
    pub org: Option<String>,
    pub key: Option<String>,
    pub rule_id: Option<String>,
    pub event_key: Option<String>,
    /// `needs_check`, `failed`, `sending`, `not_sent`, `sent`, `done` or `skipped`.
    #[schema(value_type = crate::effects::runs::RunState, required = true)]
    pub state: Option<String>,
    pub attempts: Option<u64>,
    #[schema(format = DateTime)]
    pub at: Option<String>,
    #[schema(format = DateTime)]
    pub updated_at: Option<String>,
    /// Its request was kept, so `resend` may send it again.
    pub resendable: bool,
    #[schema(format = DateTime)]
    pub lease_until: Option<String>,
    /// An `ai` run's: the tokens its model used (`{"input", "output"}`).
    #[schema(value_type = Option<Object>)]
    pub tokens: Option<Value>,
    /// Why it failed or was skipped (`reply_cap`, `ai_budget`, ...).
    pub reason: Option<String>,
    /// An `ai` run's tool calls: `[{"id", "tool", "outcome": done | proposed | refused |
    /// ignored, "error"?}]`.
    #[schema(value_type = Option<Vec<Object>>)]
    pub calls: Option<Value>,
}

/// `GET /ops/chart`: the last 24 hours, oldest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct Chart {
    pub hours: Vec<Hour>,
}

/// An hour of the chart.
#[derive(Debug, Serialize, ToSchema)]
pub struct Hour {
    pub hour: String,
    /// Events stored that hour, by kind (kinds with none left out).
    pub stored: BTreeMap<&'static str, u64>,
    /// Deliveries answered as duplicates that hour.
    pub duplicates: u64,
}

/// A message in a DLQ, looked at without consuming it.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeadLetter {
    /// What a redrive's `ids` take.
    pub id: Option<String>,
    /// The message's JSON (its text, a string, when it is not JSON; null when it has none).
    pub body: Value,
    /// How many times a worker received it.
    pub receives: Option<u64>,
    /// When it was first sent.
    #[schema(format = DateTime)]
    pub first_at: Option<String>,
}

/// A redrive: messages moved back to their queue, and whether the DLQ may hold more.
#[derive(Debug, Serialize, ToSchema)]
pub struct Moved {
    pub moved: usize,
    pub more: bool,
}

/// An event's consequences derived again and sent.
#[derive(Debug, Serialize, ToSchema)]
pub struct Sent {
    pub sent: usize,
}

/// A review item resolved (or, in a 409 `not_open`'s `outcome`, as it was resolved before).
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct Resolution {
    pub id: String,
    /// `resolved`.
    pub state: Option<String>,
    pub by: Option<String>,
    #[schema(format = DateTime)]
    pub at: Option<String>,
    pub note: Option<String>,
    /// `apply`: the payment booked (a payment's answer).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<crate::payments::event::PaymentAnswer>)]
    pub payment: Option<Value>,
    /// `same_money`: the reversal booked (a payment's answer).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<crate::payments::event::PaymentAnswer>)]
    pub reversal: Option<Value>,
}

/// A run decided: `sent` (`delivered`), or `sending` (202: `resend`, queued).
#[derive(Debug, Serialize, ToSchema)]
pub struct RunDecided {
    #[schema(value_type = RunDecidedState)]
    pub state: String,
}

/// Where a decided run stands (a document's type).
#[derive(ToSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
pub enum RunDecidedState {
    Sent,
    Sending,
}

/// A worker: whether it takes messages, and who paused or resumed it last, when.
#[derive(Debug, Serialize, ToSchema)]
pub struct ConsumerState {
    pub name: String,
    pub paused: bool,
    /// Its SQS event source mapping's state (`Enabled`, `Disabling`, ...).
    pub mapping_state: String,
    pub by: Option<String>,
    #[schema(format = DateTime)]
    pub at: Option<String>,
    /// `paused` or `resumed`; null when never.
    pub action: Option<String>,
}

/// A paused integration (or one still resuming), and how many events wait.
#[derive(Debug, Serialize, ToSchema)]
pub struct PausedIntegration {
    /// Its digest: a monobank integration's id is its webhook's credential.
    pub integration_id: String,
    pub kind: Option<String>,
    pub provider: Option<String>,
    #[schema(format = DateTime)]
    pub paused_at: Option<String>,
    pub paused_by: Option<String>,
    /// Resumed, with events still to send on (a resumption cut short): resume again.
    pub resuming: bool,
    pub held: i64,
}

/// An integration paused (`changed: false` when it was paused already).
#[derive(Debug, Serialize, ToSchema)]
pub struct IntegrationPaused {
    pub integration_id: String,
    pub paused: bool,
    pub changed: bool,
}

/// An integration resumed: the pause lifted (`resumed`: it was paused), then every held event
/// sent on once.
#[derive(Debug, Serialize, ToSchema)]
pub struct IntegrationResumed {
    /// Its digest, as the paused list names it.
    pub integration_id: String,
    pub paused: bool,
    pub resumed: bool,
    pub events: usize,
    pub sent: usize,
}
