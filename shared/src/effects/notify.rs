//! Notifications: one item per (organisation, key); a team notification is one per member,
//! keyed `KEY#RECIPIENT`, so each colleague gets exactly one copy.

use super::worker::Applied;
use super::Notification;
use crate::ids::OrgId;
use crate::orgs;
use crate::store::item::{b, Builder, Read};
use crate::store::{Cond, Item, Store, StoreError, Update};
use crate::time;
use serde_json::{json, Value};

fn pk(org: &OrgId, key: &str) -> String {
    org.pk(&format!("NOTIFICATION#{key}"))
}

fn item(n: &Notification, key: &str, recipient: &str) -> Item {
    let at = time::format(n.at);
    Builder::new(&pk(&n.org, key), "notification", n.org.as_str())
        .str("key", key)
        .str("recipient", recipient)
        .str("text", &n.text)
        .str("at", &at)
        .bool("read", false)
        .list(
            &n.org.pk(&format!("NOTIFY#{recipient}")),
            &format!("{at}#{key}"),
        )
        .build()
}

/// Delivers a notification: what was new and what a redelivery found already there.
/// `Ok(None)` means a team notification found no team.
pub async fn deliver(store: &Store, n: &Notification) -> Result<Option<Applied>, StoreError> {
    let key = n.key.as_str();
    let targets: Vec<(String, String)> = match &n.recipient {
        Some(r) => vec![(r.clone(), key.to_owned())],
        None => orgs::members(store, &n.org)
            .await?
            .into_iter()
            .map(|m| (format!("{key}#{}", m.user_id), m.user_id))
            .map(|(k, r)| (r, k))
            .collect(),
    };
    if targets.is_empty() {
        return Ok(None);
    }
    let mut applied = Applied::default();
    for (recipient, key) in &targets {
        let created = store.put_new(item(n, key, recipient)).await?.created();
        applied = applied.and(Applied::one(created));
    }
    Ok(Some(applied))
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
    let update = Update::new().set("read", b(true)).when(Cond::Exists);
    store.update_if(&pk(org, key), &update).await
}
