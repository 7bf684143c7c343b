//! The state of an outgoing-message run, moved only by conditional writes:
//! `sending` → `sent` | `not_sent` | `failed` | `needs_check`; `not_sent` → `sending` again.

use super::automation::run_key;
use crate::ids::{EventKey, OrgId};
use crate::store::item::{n, s, tag_name, Builder, Read};
use crate::store::{Cond, Item, PutNew, Store, StoreError, Update};
use crate::time;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Where a run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// An attempt is under way, or was left behind in an unknown state.
    Sending,
    Sent,
    /// Certainly not delivered: may be sent again.
    NotSent,
    Failed,
    NeedsCheck,
    /// A run without an outgoing call (a task) that has happened.
    Done,
}

pub(crate) fn run_pk(org: &OrgId, run_key: &str) -> String {
    org.pk(&format!("RUN#{run_key}"))
}

pub(crate) fn run_item(
    org: &OrgId,
    rule: &str,
    event_key: &EventKey,
    state: RunState,
    now: DateTime<Utc>,
) -> Item {
    let key = run_key(rule, event_key);
    Builder::new(&run_pk(org, &key), "rule_run", org.as_str())
        .str("run_key", &key)
        .str("rule_id", rule)
        .str("event_key", event_key.as_str())
        .tag("state", &state)
        .num("attempts", 1)
        .time("at", now)
        .time("updated_at", now)
        .list(&org.pk("RUNS"), &format!("{}#{key}", time::format(now)))
        .build()
}

/// Where a run stands when a worker picks it up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Claim {
    /// First attempt: the run is now `sending`.
    Fresh,
    /// An earlier attempt is known not to have been delivered; the run is `sending` again.
    Retry,
    /// An earlier attempt's outcome is unknown (`sending` left behind): do not send blindly.
    Unclear,
    /// `sent`, `failed`, `needs_check` or `done`: nothing more to do.
    Settled(RunState),
}

pub async fn claim(
    store: &Store,
    org: &OrgId,
    rule_id: &str,
    event_key: &EventKey,
    now: DateTime<Utc>,
) -> Result<Claim, StoreError> {
    let stored = match store
        .put_new(run_item(org, rule_id, event_key, RunState::Sending, now))
        .await?
    {
        PutNew::Created => return Ok(Claim::Fresh),
        PutNew::Existing(item) => item,
    };
    let pk = run_pk(org, &run_key(rule_id, event_key));
    match stored.tag_of("state")? {
        RunState::Sending => Ok(Claim::Unclear),
        RunState::NotSent => {
            let moved =
                transition(store, &pk, RunState::NotSent, RunState::Sending, 1, now).await?;
            Ok(if moved { Claim::Retry } else { Claim::Unclear })
        }
        other => Ok(Claim::Settled(other)),
    }
}

/// Settles a `sending` run as `state` (`sent`, `not_sent`, `failed`, `needs_check`). A run that a
/// concurrent attempt already settled keeps that state.
pub async fn set_state(
    store: &Store,
    org: &OrgId,
    rule_id: &str,
    event_key: &EventKey,
    state: RunState,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let pk = run_pk(org, &run_key(rule_id, event_key));
    if !transition(store, &pk, RunState::Sending, state, 0, now).await? {
        tracing::warn!(run = %pk, ?state, "run was no longer sending; its state is kept");
    }
    Ok(())
}

/// Moves the run from `from` to `to` (adding `attempts`); `Ok(false)` when it was not in `from`.
async fn transition(
    store: &Store,
    pk: &str,
    from: RunState,
    to: RunState,
    attempts: u32,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let update = Update::new()
        .set("state", s(tag_name(&to)))
        .set("updated_at", s(time::format(now)))
        .add("attempts", n(attempts))
        .when(Cond::Equals("state".into(), s(tag_name(&from))));
    store.update_if(pk, &update).await
}

pub async fn run_state(
    store: &Store,
    org: &OrgId,
    rule_id: &str,
    event_key: &EventKey,
) -> Result<Option<RunState>, StoreError> {
    let item = store
        .get(&run_pk(org, &run_key(rule_id, event_key)))
        .await?;
    item.map(|i| i.tag_of("state")).transpose()
}
