//! The activity log of a contact, deal or company: an entry with a key is appended only if that
//! key is not yet in that log; the log reads in time order.

use super::{ActivityLine, EntityKind, Trigger};
use crate::ids::{key_part, OrgId};
use crate::store::item::{tag_name, Builder, Read};
use crate::store::{Item, PutNew, Store, StoreError};
use crate::time;
use aws_sdk_dynamodb::types::AttributeValue;

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

/// Where an event's first activity line notes the triggers of the event that no rule took
/// when the fan-out wrote it (`append_noting`): what the operator's event list reads to show
/// such a trigger handled, in place of a handled mark of its own.
pub const NO_RULE_FOR: &str = "no_rule_for";

/// Appends the line; `Ok(false)` when the log already has its key.
pub async fn append(store: &Store, line: &ActivityLine) -> Result<bool, StoreError> {
    Ok(append_noting(store, line, &[]).await?.written)
}

/// How a line noting triggers was appended: written now, and whether the stored line (now, or
/// by an earlier write of its key) notes every one of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Appended {
    pub written: bool,
    pub noted: bool,
}

/// Whether the stored line `item` notes that no rule took `trigger` (`NO_RULE_FOR`).
pub fn notes_no_rule(item: &Item, trigger: Trigger) -> bool {
    match item.get(NO_RULE_FOR) {
        Some(AttributeValue::Ss(names)) => names.contains(&tag_name(&trigger)),
        _ => false,
    }
}

/// Appends the line noting that no rule took `untaken` (none: a plain line); a line the log
/// has already stays as it was written, and says what it notes.
pub async fn append_noting(
    store: &Store,
    line: &ActivityLine,
    untaken: &[Trigger],
) -> Result<Appended, StoreError> {
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
    let item = match untaken {
        [] => item,
        some => item.set(
            NO_RULE_FOR,
            AttributeValue::Ss(some.iter().map(tag_name).collect()),
        ),
    };
    Ok(match store.put_new(item.build()).await? {
        PutNew::Created => Appended {
            written: true,
            noted: true,
        },
        PutNew::Existing(stored) => Appended {
            written: false,
            noted: untaken.iter().all(|t| notes_no_rule(&stored, *t)),
        },
    })
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
