//! Review items as the operator sees them: each with its id, and a resolution's outcome. Listing
//! by state and resolving are `review::page` and `review::resolve_deciding`.

use super::answers::{OpsReviewItem, Resolution};
use super::ids;
use crate::review;
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

/// A resolution as the page shows it: `{"id", "state", "by", "at", "note"}`, from the item as
/// it was resolved (now, or before).
pub fn outcome(item: &Item) -> Resolution {
    let text = |name: &str| item.opt_str(name).map(str::to_owned);
    Resolution {
        id: ids::encode(item.opt_str("pk").unwrap_or_default()),
        state: text("state"),
        by: text("resolved_by"),
        at: text("resolved_at"),
        note: text("note"),
        payment: None,
        reversal: None,
    }
}
