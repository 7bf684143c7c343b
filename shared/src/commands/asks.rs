//! What the operator's actions take as their JSON bodies: one type each, read by the ops
//! function and described by the document from the same type, so what is documented is what
//! is read. A value the document names as a closed set (a decision, a kind) is read as text and
//! refused with its own code (`invalid_decision`, `invalid_kind`), as the document says.

use serde::Deserialize;
use utoipa::ToSchema;

/// `POST /ops/dlq/{queue}/redrive`: without a body, every dead letter of the queue; with one,
/// those named.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Redrive {
    /// The dead letters' message ids, 1 to 1000 (as `GET /ops/summary` lists them).
    #[schema(min_items = 1, max_items = 1000)]
    pub ids: Option<Vec<String>>,
}

/// `POST /ops/review/{id}/resolve`: a person's resolution of a review item.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Resolve {
    /// Why, 1 to 2000 characters (not only white space); without one, the decision's name.
    /// One of the two is required.
    #[schema(min_length = 1, max_length = 2000, pattern = "\\S")]
    pub note: Option<String>,
    /// `apply` books what a `payment_proposed` item proposes or puts money a payment kept on
    /// `invoice_id`; `same_money` reverses the item's payment (the same money as `as`);
    /// `distinct` and `dismiss` move nothing.
    #[schema(value_type = Option<super::Decision>)]
    pub decision: Option<String>,
    /// `apply` of money a payment kept: the invoice it goes on (`inv_...`).
    #[schema(max_length = 128)]
    pub invoice_id: Option<String>,
    /// `same_money`: the event key of the payment the item's payment is the same money as.
    #[serde(rename = "as")]
    #[schema(max_length = 510)]
    pub same_as: Option<String>,
    /// `apply` of a proposal: at most the proposed amount and what the invoice owes now.
    #[schema(inline)]
    pub amount: Option<super::AmountText>,
}

/// `POST /ops/events/replay`: a kind's events in a window, counted or their missing
/// consequences sent.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayWindow {
    #[schema(value_type = crate::store::lists::EventKind)]
    pub kind: String,
    /// RFC 3339, inclusive; before `to`, at most 7 days before it.
    #[schema(format = DateTime)]
    pub from: String,
    /// RFC 3339, exclusive.
    #[schema(format = DateTime)]
    pub to: String,
    /// Count only: send nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// Where the last call stopped (its answer's `cursor`).
    #[schema(min_length = 1, max_length = 4096)]
    pub cursor: Option<String>,
}

/// `POST /ops/integrations/{id}/recover`: what a provider sent in a window.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Recover {
    /// RFC 3339; before `to`, at most 31 days before it.
    #[schema(format = DateTime)]
    pub from: String,
    /// RFC 3339.
    #[schema(format = DateTime)]
    pub to: String,
    /// A monobank statement read page by page: where the next page ends (as the last answer
    /// gave it).
    pub cursor: Option<i64>,
}

/// `POST /ops/runs/{id}/decide`: what a person decided about a run that needs a check.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Decide {
    /// `delivered`: it arrived, mark it sent; `resend`: send it again, once.
    #[schema(value_type = crate::ops::runs::Decision)]
    pub decision: String,
}
