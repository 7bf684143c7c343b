//! The shapes of the answers, for the OpenAPI document only: the handlers (and `firmspace`)
//! build these bodies with `json!`, so each type mirrors one of them field by field, and the
//! tests hold the shared ones to the real output.

use serde::Serialize;
use utoipa::ToSchema;

/// Every 4xx and 5xx answer, an RFC 9457 problem (`application/problem+json`). A 4xx names the
/// problem and wrote nothing; a 5xx says nothing internal (500: our defect; 503: retry later).
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    /// `tag:firmspace.events,2026:problem:<error>`: one stable URI per code.
    #[schema(example = "tag:firmspace.events,2026:problem:not_found")]
    r#type: String,
    /// The code in words.
    title: String,
    /// The HTTP status.
    status: u16,
    detail: String,
    /// `urn:request:<x-request-id>`.
    instance: Option<String>,
    /// A stable code: `malformed`, `unauthorized`, `not_found`, `invalid_signature`, ...
    error: String,
    /// The request field that was refused.
    field: Option<String>,
    /// Seconds to wait (429, 503), as `Retry-After` says.
    retry_after: Option<u64>,
}

/// The answers' own type: the document describes what the handlers serialise.
pub use firmspace::payments::invoice::InvoiceView as Invoice;

pub use crate::invoices::InvoiceDetail;

pub use firmspace::payments::credit::CreditNoteIssued;

pub use firmspace::commands::answers::InvoiceVoided;

pub use firmspace::commands::answers::InvoiceCopy;

pub use firmspace::payments::event::PaymentAnswer;

pub use firmspace::commands::answers::OrgCreated;

pub use firmspace::commands::answers::IntegrationCreated;

pub use firmspace::commands::answers::Member;

pub use firmspace::commands::answers::MemberAdded;

pub use firmspace::effects::notify::NotificationView as Notification;

pub use firmspace::commands::answers::MarkedRead;

pub use firmspace::effects::activity::ActivityView as ActivityLine;

pub use firmspace::effects::automation::RuleView as Rule;

pub use firmspace::effects::automation::TaskView as Task;

pub use firmspace::review::ReviewView as ReviewItem;

pub use firmspace::calls::CallView as Call;

pub use firmspace::calls::CallAnswer;

pub use firmspace::contacts::ContactView as Contact;

pub use firmspace::messages::conversation::ConversationView as Conversation;

pub use firmspace::messages::item::MessageView as Message;

pub use crate::bank::BankTransactions;

pub use firmspace::commands::answers::{CsvImported, FileAccepted};

pub use firmspace::bank::files::FileImportView as FileImport;

pub use firmspace::commands::answers::BankMatched;

pub use firmspace::commands::answers::BankUnmatched;

pub use firmspace::commands::answers::ImportStarted;

pub use crate::setup::IntegrationInfo;

pub use firmspace::deals::DealView as Deal;

/// One tool an assistant may call.
#[derive(Serialize, ToSchema)]
pub struct AssistantTool {
    #[schema(example = "register_payment")]
    name: String,
    description: String,
    /// The input's JSON schema.
    #[schema(value_type = Object)]
    input_schema: serde_json::Value,
}

/// The tools: `reply`, `create_task`, `register_payment`, `create_credit_note`, `resolve_review`.
#[derive(Serialize, ToSchema)]
pub struct AssistantTools {
    tools: Vec<AssistantTool>,
}

/// What became of a request, asked by its key: `running`, or `done` with what it was answered.
#[derive(Serialize, ToSchema)]
pub struct RequestOutcome {
    key: String,
    #[schema(example = "done")]
    state: String,
    status: Option<u16>,
    #[schema(value_type = Object)]
    answer: Option<serde_json::Value>,
    at: Option<String>,
}

/// A tool call's result; a repeat of the `call_id` gets the stored one with `duplicate: true`.
#[derive(Serialize, ToSchema)]
pub struct AssistantCallAnswer {
    call_id: String,
    /// What the tool answers: the payment's answer, the credit note, `{"task_id", "created"}`,
    /// `{"state": "sending"}` for a reply, the resolution.
    #[schema(value_type = Object)]
    result: serde_json::Value,
    duplicate: bool,
}
