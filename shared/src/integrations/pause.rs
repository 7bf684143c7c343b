//! What a pause leaves on an integration's item and beside it: when and by whom it was paused
//! (on the organisation's list of paused integrations, the second index), and a `HELD#` mark
//! per event it holds, each counted on the item (`held`) in the mark's own transaction, so a
//! resumption knows how many marks remain whatever the index shows yet.

use super::integration_pk;
use crate::ids::{IntegrationId, OrgId};
use crate::store::item::{n, s, Builder, Read};
use crate::store::{Cond, Item, Step, Update};
use crate::time;
use chrono::{DateTime, Utc};

pub const PAUSED_AT: &str = "paused_at";
pub const PAUSED_BY: &str = "paused_by";
/// Marks that wait on the integration's item: one more with each mark, one less as each goes.
pub const HELD: &str = "held";

/// When the integration stored as `item` was paused, if it is.
pub fn paused_since(item: &Item) -> Option<&str> {
    item.opt_str(PAUSED_AT)
}

/// The organisation's paused integrations (the second index: the first holds the bank
/// integrations' import list, which a pause leaves alone).
pub fn paused_list(org: &OrgId) -> String {
    org.pk("INTEGRATIONS#paused")
}

/// An integration's held marks, in the order their events are sent on.
pub fn held_list(id: &IntegrationId) -> String {
    id.org.pk(&format!("HELD#{}", id.id))
}

/// Where the held mark of the event at `event_pk` is.
pub fn held_pk(id: &IntegrationId, event_pk: &str) -> String {
    id.org.pk(&format!("HELD#{event_pk}"))
}

/// A mark holding the event at `event_pk` for `id`'s resumption, at `position` (a time) on its
/// list; `extra` attributes carry what the resumption needs beyond the stored event.
pub fn held_mark(
    id: &IntegrationId,
    event_pk: &str,
    position: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Builder {
    Builder::new(&held_pk(id, event_pk), "held", id.org.as_str())
        .str("event_pk", event_pk)
        .str("integration_id", &id.id)
        .time("at", now)
        .list(
            &held_list(id),
            &format!("{}#{event_pk}", time::format(position)),
        )
}

/// The steps that hold with `mark`: the mark, and one more `held` on the integration, only
/// while the pause read (`since`) still stands.
pub fn hold_steps(id: &IntegrationId, since: &str, mark: Item, now: DateTime<Utc>) -> Vec<Step> {
    let still = Update::new()
        .set("held_at", s(time::format(now)))
        .add(HELD, n(1))
        .when(Cond::Equals(PAUSED_AT.into(), s(since)));
    vec![
        Step::Update {
            pk: integration_pk(id),
            update: still,
        },
        Step::PutNew(mark),
    ]
}

/// The steps that end a mark once its event was sent on: the mark deleted while it is there,
/// and one less `held`.
pub fn release_steps(id: &IntegrationId, mark_pk: &str) -> Vec<Step> {
    vec![
        Step::Delete(mark_pk.to_owned()),
        Step::Update {
            pk: integration_pk(id),
            update: Update::new().add(HELD, n(-1)).when(Cond::Exists),
        },
    ]
}
