//! The activity log of a contact, deal or company: an entry with a key is appended only if that
//! key is not yet in that log; the log reads in time order.

use super::{ActivityLine, EntityKind};
use crate::ids::{key_part, OrgId};
use crate::store::item::{tag_name, Builder, Read};
use crate::store::{Store, StoreError};
use crate::time;

pub(super) fn log_pk(org: &OrgId, entity_kind: EntityKind, entity_id: &str) -> String {
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
        .list(&log, &format!("{at}#{key}"));
    let item = match &line.money {
        Some((amount, currency, payment)) => item
            .str("amount", amount)
            .str("currency", currency)
            .str("payment_key", payment),
        None => item,
    };
    Ok(store.put_new(item.build()).await?.created())
}

/// The log, oldest first.
pub async fn list(
    store: &Store,
    org: &OrgId,
    entity_kind: EntityKind,
    entity_id: &str,
) -> Result<Vec<ActivityView>, StoreError> {
    let items = store
        .list(&log_pk(org, entity_kind, entity_id), false, 500)
        .await?;
    items
        .iter()
        .map(|i| {
            Ok(ActivityView {
                key: i.str_of("key")?.to_owned(),
                kind: i.str_of("entry_kind")?.to_owned(),
                text: i.str_of("text")?.to_owned(),
                at: i.str_of("at")?.to_owned(),
            })
        })
        .collect()
}

/// A line of a record's activity log (`ActivityLine`).
#[derive(Clone, Debug, serde::Serialize, utoipa::ToSchema)]
#[schema(as = ActivityLine)]
pub struct ActivityView {
    pub key: String,
    /// `payment`, `message`, `call`, `credit_note`, `lead`, ...
    pub kind: String,
    pub text: String,
    #[schema(format = DateTime)]
    pub at: String,
}
