//! The activity log of a contact, deal or company: an entry with a key is appended only if that
//! key is not yet in that log; the log reads in time order.

use super::{ActivityLine, EntityKind};
use crate::ids::{key_part, OrgId};
use crate::store::item::{tag_name, Builder, Read};
use crate::store::{Store, StoreError};
use crate::time;
use serde_json::{json, Value};

fn log_pk(org: &OrgId, entity_kind: EntityKind, entity_id: &str) -> String {
    org.pk(&format!(
        "ACTIVITY#{}#{}",
        tag_name(&entity_kind),
        key_part(entity_id)
    ))
}

/// The key a line is stored under: its log's, then its own.
pub fn entry_pk(line: &ActivityLine) -> String {
    let log = log_pk(&line.org, line.entity_kind, &line.entity_id);
    format!("{log}#{}", key_part(&line.key))
}

/// Appends the line; `Ok(false)` when the log already has its key.
pub async fn append(store: &Store, line: &ActivityLine) -> Result<bool, StoreError> {
    let log = log_pk(&line.org, line.entity_kind, &line.entity_id);
    let at = time::format(line.at);
    let key = key_part(&line.key);
    let item = Builder::new(&entry_pk(line), "activity", line.org.as_str())
        .tag("entity_kind", &line.entity_kind)
        .str("entity_id", &line.entity_id)
        .str("key", &line.key)
        .str("entry_kind", &line.kind)
        .str("text", &line.text)
        .str("at", &at)
        .list(&log, &format!("{at}#{key}"))
        .build();
    Ok(store.put_new(item).await?.created())
}

/// The log, oldest first.
pub async fn list(
    store: &Store,
    org: &OrgId,
    entity_kind: EntityKind,
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
