//! Review items as the operator sees them: each with its id, and a resolution's outcome. Listing
//! by state and resolving are `review::page` and `review::resolve`.

use super::ids;
use crate::review::{self, Resolved};
use crate::store::item::Read;
use crate::store::Item;
use serde_json::{json, Value};

pub use crate::review::{open_by_reason, NOTE_MAX, STATES};

/// The item as a list shows it, with its id.
pub fn to_json(item: &Item) -> Value {
    let mut out = serde_json::to_value(review::view(item)).expect("a review item serialises");
    out["id"] = json!(ids::encode(item.opt_str("pk").unwrap_or_default()));
    out["org"] = json!(item.opt_str("org"));
    out
}

/// A resolution as the page shows it: `{"id", "state", "by", "at", "note"}`, for the item under
/// `pk` resolved now by `by` with `note`, or as it was resolved before.
pub fn outcome(pk: &str, by: &str, note: &str, resolved: &Resolved) -> Option<Value> {
    match resolved {
        Resolved::Now { at } => Some(json!({
            "id": ids::encode(pk), "state": "resolved", "by": by, "at": at, "note": note,
        })),
        Resolved::Already(item) => Some(json!({
            "id": ids::encode(item.opt_str("pk").unwrap_or_default()),
            "state": item.opt_str("state"),
            "by": item.opt_str("resolved_by"),
            "at": item.opt_str("resolved_at"),
            "note": item.opt_str("note"),
        })),
        Resolved::NotFound => None,
    }
}
