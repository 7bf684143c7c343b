//! The activity log of a contact, deal or company: an entry with a key is appended only if that
//! key is not yet in that log; the log reads in time order.

use crate::ids::OrgId;
use crate::store::item::{Builder, Read};
use crate::store::{Store, StoreError};
use serde_json::{json, Value};

pub struct Entry<'a> {
    pub entity_kind: &'a str,
    pub entity_id: &'a str,
    pub key: &'a str,
    pub kind: &'a str,
    pub text: &'a str,
    pub at: &'a str,
}

fn log_pk(org: &OrgId, entity_kind: &str, entity_id: &str) -> String {
    org.pk(&format!("ACTIVITY#{entity_kind}#{entity_id}"))
}

/// Appends the entry; `Ok(false)` when the log already has this key.
pub async fn append(store: &Store, org: &OrgId, entry: &Entry<'_>) -> Result<bool, StoreError> {
    let log = log_pk(org, entry.entity_kind, entry.entity_id);
    let item = Builder::new(&format!("{log}#{}", entry.key), "activity", org.as_str())
        .str("entity_kind", entry.entity_kind)
        .str("entity_id", entry.entity_id)
        .str("key", entry.key)
        .str("entry_kind", entry.kind)
        .str("text", entry.text)
        .str("at", entry.at)
        .list(&log, &format!("{}#{}", entry.at, entry.key))
        .build();
    store.put_new(item).await
}

/// The log, oldest first.
pub async fn list(
    store: &Store,
    org: &OrgId,
    entity_kind: &str,
    entity_id: &str,
) -> Result<Vec<Value>, StoreError> {
    let items = store
        .list(&log_pk(org, entity_kind, entity_id), false, 500)
        .await?;
    Ok(items
        .iter()
        .map(|i| {
            json!({
                "key": i.opt_str("key"),
                "kind": i.opt_str("entry_kind"),
                "text": i.opt_str("text"),
                "at": i.opt_str("at"),
            })
        })
        .collect())
}
