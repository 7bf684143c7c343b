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
