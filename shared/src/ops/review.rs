//! Review items as the operator sees them: listed by state with an id, and resolved once with a
//! note through `review::resolve`.

use super::ids;
use crate::ids::OrgId;
use crate::review::{self, item_json};
use crate::store::item::Read;
use crate::store::{Item, Store, StoreError};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

pub use crate::review::{open_by_reason, NOTE_MAX, STATES};

/// The item as a list shows it, with its id.
pub fn to_json(item: &Item) -> Value {
    let mut out = item_json(item);
    out["id"] = json!(ids::encode(item.opt_str("pk").unwrap_or_default()));
    out["org"] = json!(item.opt_str("org"));
    out
}

/// A page of an organisation's review items in `state`, newest first.
pub async fn page(
    store: &Store,
    org: &OrgId,
    state: &str,
    limit: i32,
    cursor: Option<&str>,
) -> Result<(Vec<Value>, Option<String>), StoreError> {
    review::page(store, org, state, limit, cursor, to_json).await
}

/// How an operator's resolution ended, as the page shows it.
#[derive(Clone, Debug, PartialEq)]
pub enum Resolved {
    /// Resolved now: `{"id", "state", "by", "at", "note"}`.
    Now(Value),
    /// Resolved before (by this request's twin or another person): the stored outcome.
    Already(Value),
    NotFound,
}

fn outcome(item: &Item) -> Value {
    json!({
        "id": ids::encode(item.opt_str("pk").unwrap_or_default()),
        "state": item.opt_str("state"),
        "by": item.opt_str("resolved_by"),
        "at": item.opt_str("resolved_at"),
        "note": item.opt_str("note"),
    })
}

/// Resolves the open item under `pk` of `org`, by `by`, with `note`.
pub async fn resolve(
    store: &Store,
    org: &OrgId,
    pk: &str,
    by: &str,
    note: &str,
    now: DateTime<Utc>,
) -> Result<Resolved, StoreError> {
    Ok(
        match review::resolve(store, org, pk, by, note, now).await? {
            review::Resolved::Now { at } => Resolved::Now(json!({
                "id": ids::encode(pk), "state": "resolved", "by": by, "at": at, "note": note,
            })),
            review::Resolved::Already(item) => Resolved::Already(outcome(&item)),
            review::Resolved::NotFound => Resolved::NotFound,
        },
    )
}
