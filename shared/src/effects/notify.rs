//! Notifications: one item per (organisation, key); a team notification is one per member,
//! keyed `KEY#RECIPIENT`, so each colleague gets exactly one copy.

use crate::ids::OrgId;
use crate::orgs;
use crate::store::item::{b, Builder, Read};
use crate::store::{Item, Store, StoreError};
use serde_json::{json, Value};

fn pk(org: &OrgId, key: &str) -> String {
    org.pk(&format!("NOTIFICATION#{key}"))
}

fn item(org: &OrgId, key: &str, recipient: &str, text: &str, at: &str) -> Item {
    Builder::new(&pk(org, key), "notification", org.as_str())
        .str("key", key)
        .str("recipient", recipient)
        .str("text", text)
        .str("at", at)
        .set("read", b(false))
        .list(
            &org.pk(&format!("NOTIFY#{recipient}")),
            &format!("{at}#{key}"),
        )
        .build()
}

/// Delivers a notification; returns how many copies were new (0 on a redelivery).
/// `Ok(None)` means a team notification found no team.
pub async fn deliver(
    store: &Store,
    org: &OrgId,
    key: &str,
    recipient: Option<&str>,
    text: &str,
    at: &str,
) -> Result<Option<usize>, StoreError> {
    let targets: Vec<(String, String)> = match recipient {
        Some(r) => vec![(r.to_owned(), key.to_owned())],
        None => orgs::members(store, org)
            .await?
            .into_iter()
            .map(|m| (format!("{key}#{}", m.user_id), m.user_id))
            .map(|(k, r)| (r, k))
            .collect(),
    };
    if targets.is_empty() {
        return Ok(None);
    }
    let mut created = 0;
    for (recipient, key) in &targets {
        if store.put_new(item(org, key, recipient, text, at)).await? {
            created += 1;
        }
    }
    Ok(Some(created))
}

pub fn to_json(item: &Item) -> Value {
    json!({
        "key": item.opt_str("key"),
        "recipient": item.opt_str("recipient"),
        "text": item.opt_str("text"),
        "at": item.opt_str("at"),
        "read": item.bool_of("read"),
    })
}

/// A member's notifications, newest first.
pub async fn list(store: &Store, org: &OrgId, recipient: &str) -> Result<Vec<Value>, StoreError> {
    let items = store
        .list(&org.pk(&format!("NOTIFY#{recipient}")), true, 200)
        .await?;
    Ok(items.iter().map(to_json).collect())
}

/// Marks one notification read; `Ok(false)` when there is no such notification.
pub async fn mark_read(store: &Store, org: &OrgId, key: &str) -> Result<bool, StoreError> {
    let result = store
        .client
        .update_item()
        .table_name(&store.table)
        .set_key(Some(Store::key(&pk(org, key))))
        .update_expression("SET #r = :t")
        .condition_expression("attribute_exists(pk)")
        .expression_attribute_names("#r", "read")
        .expression_attribute_values(":t", b(true))
        .send()
        .await;
    match result {
        Ok(_) => Ok(true),
        Err(e)
            if e.as_service_error()
                .is_some_and(|s| s.is_conditional_check_failed_exception()) =>
        {
            Ok(false)
        }
        Err(e) => Err(StoreError::sdk(e)),
    }
}
