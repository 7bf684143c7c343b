//! Items a machine cannot decide (overpayment, currency mismatch, unknown invoice, a reused key
//! with another payload, an outgoing call in an unknown state) become review items for a person.
//! They live on the sparse list `ORG#{org}#REVIEW`, newest first.

use crate::ids::OrgId;
use crate::store::item::{Builder, Read};
use crate::store::{Item, Store, StoreError};
use crate::time;
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

#[derive(Clone, Debug, PartialEq)]
pub struct ReviewItem {
    pub org: OrgId,
    /// What it is about: `payment`, `automation`, `message`, ...
    pub kind: String,
    pub reason: String,
    /// The key of the event or run it concerns; one review item per key and reason.
    pub key: String,
    pub at: DateTime<Utc>,
    pub detail: Value,
}

impl ReviewItem {
    pub fn pk(&self) -> String {
        self.org.pk(&format!("REVIEW#{}#{}", self.reason, self.key))
    }

    pub fn to_item(&self) -> Item {
        Builder::new(&self.pk(), "review", self.org.as_str())
            .str("review_kind", &self.kind)
            .str("reason", &self.reason)
            .str("key", &self.key)
            .time("at", self.at)
            .str("state", "open")
            .str("detail", self.detail.to_string())
            .list(
                &self.org.pk("REVIEW"),
                &format!("{}#{}", time::format(self.at), self.key),
            )
            .index(
                &crate::ops::review_pk(&self.org, "open"),
                &format!("{}#{}#{}", time::format(self.at), self.reason, self.key),
            )
            .build()
    }

    /// Records it; a second record of the same key and reason changes nothing (`Ok(false)`).
    pub async fn put(&self, store: &Store) -> Result<bool, StoreError> {
        Ok(store.put_new(self.to_item()).await?.created())
    }
}

pub fn item_json(item: &Item) -> Value {
    let detail = item
        .opt_str("detail")
        .and_then(|d| serde_json::from_str(d).ok())
        .unwrap_or(Value::Null);
    json!({
        "kind": item.opt_str("review_kind"),
        "reason": item.opt_str("reason"),
        "key": item.opt_str("key"),
        "at": item.opt_str("at"),
        "state": item.opt_str("state"),
        "detail": detail,
        "note": item.opt_str("note"),
        "resolved_by": item.opt_str("resolved_by"),
        "resolved_at": item.opt_str("resolved_at"),
    })
}

/// Newest first.
pub async fn list(store: &Store, org: &OrgId, limit: i32) -> Result<Vec<Value>, StoreError> {
    let items = store.list(&org.pk("REVIEW"), true, limit).await?;
    Ok(items.iter().map(item_json).collect())
}
