//! Review items as the operator sees them: listed by state, and resolved once with a note. The
//! resolution is one conditional update (`open` → `resolved`) that also moves the item to the
//! resolved list, so two people resolving at once leave one resolution.

use super::{ids, review_pk};
use crate::ids::OrgId;
use crate::review::item_json;
use crate::store::item::{s, Read};
use crate::store::{Cond, Index, Item, Store, StoreError, Update};
use crate::time;
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

/// The states a review item is listed in.
pub const STATES: [&str; 2] = ["open", "resolved"];
/// The longest note a resolution keeps, in characters.
pub const NOTE_MAX: usize = 2000;

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
    super::page_of(store, &review_pk(org, state), limit, cursor, to_json).await
}

/// How a resolution ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Resolved {
    /// Resolved now: `{"state", "by", "at", "note"}`.
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
    let at = time::format(now);
    let update = Update::new()
        .set("state", s("resolved"))
        .set("resolved_by", s(by))
        .set("resolved_at", s(&at))
        .set("note", s(note))
        .set("gsi2pk", s(review_pk(org, "resolved")))
        .set("gsi2sk", s(format!("{at}#{pk}")))
        .when(Cond::Equals("state".into(), s("open")));
    if store.update_if(pk, &update).await? {
        return Ok(Resolved::Now(json!({
            "id": ids::encode(pk), "state": "resolved", "by": by, "at": at, "note": note,
        })));
    }
    Ok(match store.get(pk).await? {
        Some(item) => Resolved::Already(outcome(&item)),
        None => Resolved::NotFound,
    })
}

/// Open review items by reason: the reasons of the open list, read a page at a time.
pub async fn open_by_reason(
    store: &Store,
    org: &OrgId,
) -> Result<std::collections::BTreeMap<String, u64>, StoreError> {
    let mut by_reason = std::collections::BTreeMap::new();
    let mut cursor = None;
    loop {
        let (items, next) = store
            .page_in(
                Index::States,
                &review_pk(org, "open"),
                None,
                true,
                1000,
                cursor.as_deref(),
            )
            .await?;
        for item in &items {
            *by_reason
                .entry(item.opt_str("reason").unwrap_or("unknown").to_owned())
                .or_insert(0) += 1;
        }
        match next {
            Some(next) => cursor = Some(next),
            None => return Ok(by_reason),
        }
    }
}
