//! Review items as the operator sees them: each with its id, and a resolution's outcome. Listing
//! by state and resolving are `review::page` and `review::resolve`.

use super::answers::{OpsReviewItem, Resolution};
use super::ids;
use crate::review::{self, Resolved};
use crate::store::item::Read;
use crate::store::Item;

pub use crate::review::{open_by_reason, NOTE_MAX, STATES};

/// The item as a list shows it, with its id.
pub fn view(item: &Item) -> OpsReviewItem {
    OpsReviewItem {
        id: ids::encode(item.opt_str("pk").unwrap_or_default()),
        org: item.opt_str("org").map(str::to_owned),
        item: review::view(item),
    }
}

/// A resolution as the page shows it: `{"id", "state", "by", "at", "note"}`, for the item under
/// `pk` resolved now by `by` with `note`, or as it was resolved before.
pub fn outcome(pk: &str, by: &str, note: &str, resolved: &Resolved) -> Option<Resolution> {
    let text = |item: &Item, name: &str| item.opt_str(name).map(str::to_owned);
    match resolved {
        Resolved::Now { at } => Some(Resolution {
            id: ids::encode(pk),
            state: Some("resolved".to_owned()),
            by: Some(by.to_owned()),
            at: Some(at.clone()),
            note: Some(note.to_owned()),
            payment: None,
            reversal: None,
        }),
        Resolved::Already(item) => Some(Resolution {
            id: ids::encode(item.opt_str("pk").unwrap_or_default()),
            state: text(item, "state"),
            by: text(item, "resolved_by"),
            at: text(item, "resolved_at"),
            note: text(item, "note"),
            payment: None,
            reversal: None,
        }),
        Resolved::NotFound => None,
    }
}
