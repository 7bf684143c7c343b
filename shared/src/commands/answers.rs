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
#[derive(Serialize, ToSchema)]
pub struct InvoiceVoided {
    #[serde(flatten)]
    pub invoice: InvoiceView,
    pub duplicate: bool,
}

/// A copy of an invoice: a new draft with a new number.
#[derive(Serialize, ToSchema)]
pub struct InvoiceCopy {
    #[serde(flatten)]
    pub invoice: InvoiceView,
    /// The id of the invoice copied.
    pub duplicate_of: String,
}

/// A match: the money applied, the invoice now, the one a re-match took it from, and who
/// matched when.
#[derive(Serialize, ToSchema)]
pub struct BankMatched {
    pub duplicate: bool,
    #[schema(example = "40.00")]
    pub applied: String,
    pub invoice: Option<InvoiceView>,
    pub previous_invoice: Option<InvoiceView>,
    /// The key's id (or the admin's name) that matched.
    pub by: String,
    pub at: String,
}

/// An unmatch: the money taken back and the invoice now.
#[derive(Serialize, ToSchema)]
pub struct BankUnmatched {
    #[schema(example = "40.00")]
    pub reverted: String,
    pub invoice: Option<InvoiceView>,
}
