//! The answers of the commands that are not one domain record: the types the handlers
//! serialise and the OpenAPI document describes, so the two cannot drift.

use crate::payments::invoice::InvoiceView;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

/// A command's answer as the JSON the request layer keeps and gives again.
pub(super) fn json<T: Serialize>(answer: &T) -> Value {
    serde_json::to_value(answer).expect("an answer serialises")
}

/// A void invoice (`duplicate: true` when it was void already).
#[derive(Debug, Serialize, ToSchema)]
pub struct InvoiceVoided {
    #[serde(flatten)]
    pub invoice: InvoiceView,
    pub duplicate: bool,
}

/// A copy of an invoice: a new draft with a new number.
#[derive(Debug, Serialize, ToSchema)]
pub struct InvoiceCopy {
    #[serde(flatten)]
    pub invoice: InvoiceView,
    /// The id of the invoice copied.
    pub duplicate_of: String,
}

/// A match: the money applied, the invoice now, the one a re-match took it from, and who
/// matched when.
#[derive(Debug, Serialize, ToSchema)]
pub struct BankMatched {
    pub duplicate: bool,
    #[schema(example = "40.00")]
    pub applied: String,
    pub invoice: Option<InvoiceView>,
    pub previous_invoice: Option<InvoiceView>,
    /// The key's id (or the admin's name) that matched.
    pub by: String,
    #[schema(format = DateTime)]
    pub at: String,
}

/// An unmatch: the money taken back and the invoice now.
#[derive(Debug, Serialize, ToSchema)]
pub struct BankUnmatched {
    #[schema(example = "40.00")]
    pub reverted: String,
    pub invoice: Option<InvoiceView>,
}

/// A new integration: where its sender posts and how it signs, or where outgoing calls go.
/// Each kind fills its own fields; the rest are absent. Its secrets are shown here once.
#[derive(Debug, Default, Serialize, ToSchema)]
pub struct IntegrationCreated {
    pub integration_id: String,
    #[schema(value_type = crate::integrations::IntegrationKind)]
    pub kind: Value,
    /// `standard`, `stripe`, `monobank`, `telegram`, `whatsapp`, `twilio`, `csv`, ...
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub provider: Option<Value>,
    /// How deliveries (webhooks) or outgoing calls (outbound) are signed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// The signing secret (shown once); null for a monobank payment and Twilio, which sign
    /// with their own keys; absent for the kinds that take tokens instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub secret: Option<Value>,
    /// Where the sender posts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webhook_url: Option<String>,
    /// Telegram: the token to give `setWebhook` as `secret_token`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret_token: Option<String>,
    /// WhatsApp: the token Meta's subscription check sends back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify_token: Option<String>,
    /// A monobank statement's account.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// A CSV bank integration's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Where a CSV statement is uploaded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upload_url: Option<String>,
    /// Outbound: where events are sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Outbound: where the target reports a key's state; null when it has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub status_url: Option<Value>,
}

/// A new organisation and its first API key.
#[derive(Debug, Serialize, ToSchema)]
pub struct OrgCreated {
    pub org_id: String,
    pub name: String,
    /// Shown once; only its SHA-256 is stored.
    pub api_key: String,
}

/// A member as listed.
#[derive(Debug, Serialize, ToSchema)]
pub struct Member {
    pub user_id: String,
    pub name: String,
}

/// A member added (`duplicate: true` when the member was there already).
#[derive(Debug, Serialize, ToSchema)]
pub struct MemberAdded {
    pub user_id: String,
    pub name: String,
    pub duplicate: bool,
}

/// A notification marked read.
#[derive(Debug, Serialize, ToSchema)]
pub struct MarkedRead {
    pub key: String,
    pub read: bool,
}

/// An accepted CSV file of up to 5,000 rows, stored now.
#[derive(Debug, Serialize, ToSchema)]
pub struct CsvImported {
    pub rows: usize,
    pub imported: usize,
    /// Rows stored before (this file again, an overlapping file).
    pub duplicates: usize,
    /// Rows whose bank id another row holds: the first kept, a review item filed.
    pub conflicts: usize,
}

/// A CSV file of more than 5,000 rows, kept for the import worker: the import, where to follow
/// it, and whether the same file was sent before.
#[derive(Debug, Serialize, ToSchema)]
pub struct FileAccepted {
    #[serde(flatten)]
    pub import: crate::bank::files::FileImportView,
    /// `/api/imports/{import_id}`.
    pub status_url: String,
    pub duplicate: bool,
}

/// An import request: `started`, or why not (`running`: a run holds the statement window).
#[derive(Debug, Serialize, ToSchema)]
pub struct ImportStarted {
    pub started: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
}

/// A new key: the only answer that ever holds `api_key`.
#[derive(Debug, Serialize, ToSchema)]
pub struct KeyCreated {
    pub key_id: String,
    /// Shown once; only its SHA-256 is stored.
    pub api_key: String,
    pub scopes: Vec<crate::orgs::keys::Scope>,
    pub name: String,
    #[schema(format = DateTime)]
    pub created_at: String,
}

/// An integration's secrets rotated: which it holds now, never their values.
#[derive(Debug, Serialize, ToSchema)]
pub struct SecretsRotated {
    pub integration_id: String,
    pub secrets: crate::integrations::rotation::SecretsState,
}

/// An integration paused (`changed`: it was not before), or resumed with its held events sent.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum PauseAnswer {
    Paused(crate::ops::answers::IntegrationPaused),
    Resumed(crate::ops::answers::IntegrationResumed),
}

/// A task a command made (`created: false`: the same run made it before).
#[derive(Debug, Serialize, ToSchema)]
pub struct TaskCreated {
    #[schema(example = "task_0123456789abcdef")]
    pub task_id: String,
    pub created: bool,
}

/// An event's answer as its write gives it ([`crate::store::Written::answer`]: the event's own
/// answer, `duplicate` set by whether this arrival wrote it), documented as `S`: the event
/// decides its answer once, and a repeat gives the same.
pub struct EventAnswer<S> {
    json: Value,
    doc: std::marker::PhantomData<fn() -> S>,
}

impl<S> EventAnswer<S> {
    pub fn of<T: crate::store::Answer>(written: &crate::store::Written<T>) -> Self {
        Self::from_json(written.answer())
    }

    pub(super) fn from_json(json: Value) -> Self {
        Self {
            json,
            doc: std::marker::PhantomData,
        }
    }

    /// Whether this arrival found the event written before (`"duplicate": true`).
    pub fn is_repeat(&self) -> bool {
        self.json["duplicate"] == true
    }
}

impl<S> std::fmt::Debug for EventAnswer<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.json.fmt(f)
    }
}

impl<S> Serialize for EventAnswer<S> {
    fn serialize<Z: serde::Serializer>(&self, serializer: Z) -> Result<Z::Ok, Z::Error> {
        self.json.serialize(serializer)
    }
}

impl<S: ToSchema> utoipa::PartialSchema for EventAnswer<S> {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        S::schema()
    }
}

impl<S: ToSchema> ToSchema for EventAnswer<S> {
    fn name() -> std::borrow::Cow<'static, str> {
        S::name()
    }

    fn schemas(
        schemas: &mut Vec<(
            String,
            utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
        )>,
    ) {
        S::schemas(schemas)
    }
}

/// A bank row matched to an invoice, or its match undone.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum BankMatch {
    Matched(Box<BankMatched>),
    Unmatched(Box<BankUnmatched>),
}

/// Where a reply is: queued for the automation worker (`sending`), or sent by it (`sent`, a
/// model's reply, which the worker running the model sends itself).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReplyState {
    Sending,
    Sent,
}

/// A reply into a conversation, sent once as its run.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ReplyQueued {
    pub state: ReplyState,
    pub conversation_id: String,
    /// The run that sends it (`{rule}:{key}`).
    pub run: String,
}

/// A CSV statement: stored now (up to 5,000 rows) or kept for the import worker.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum StatementUploaded {
    Imported(CsvImported),
    Accepted(FileAccepted),
}

/// A softphone's report of a call that has not ended: nothing stored.
#[derive(Debug, Serialize, ToSchema)]
pub struct CallIgnored {
    pub status: crate::delivery::Ignored,
    /// What the softphone said (`ringing`, `in-progress`, ...).
    pub call_status: String,
}

/// A call stored now, or met again (`duplicate`).
pub type CallAnswered = EventAnswer<crate::calls::CallAnswer>;

/// A softphone's report: the call (stored now, or `duplicate`), or one not ended yet.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum CallRecorded {
    Call(CallAnswered),
    Ignored(CallIgnored),
}

/// The state of a model's payment: `proposed`, for a person to apply or dismiss.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Proposed {
    Proposed,
}

/// A model's payment: a `payment_proposed` review item, nothing booked.
#[derive(Debug, Serialize, ToSchema)]
pub struct PaymentProposed {
    pub state: Proposed,
    /// The review item's key (`{rule}:{call}`).
    pub review_key: String,
    /// Whether this call filed it (`false`: the same call filed it before).
    pub filed: bool,
    /// What the item holds: the invoice, the amount, what is open now and the trigger.
    pub detail: Value,
}

/// A payment booked (or met again: `duplicate`), as its event answers.
pub type PaymentBooked = EventAnswer<crate::payments::event::PaymentAnswer>;

/// A payment: booked by a person or an assistant, or proposed by a model.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum PaymentRegistered {
    Booked(PaymentBooked),
    Proposed(PaymentProposed),
}
