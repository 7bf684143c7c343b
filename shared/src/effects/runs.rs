//! The state of an outgoing-message run, moved only by conditional writes:
//! `sending` → `sent` | `not_sent` | `failed` | `needs_check`; `not_sent` → `sending` again.

use super::automation::run_key;
use crate::ids::OrgId;
use crate::payments::invoice::at_str;
use crate::store::item::{n, s, Builder, Read};
use crate::store::{Item, Store, StoreError};
use chrono::{DateTime, Utc};

pub(crate) fn run_pk(org: &OrgId, run_key: &str) -> String {
    org.pk(&format!("RUN#{run_key}"))
}

pub(crate) fn run_item(
    org: &OrgId,
    rule: &str,
    event_key: &str,
    state: &str,
    now: DateTime<Utc>,
) -> Item {
    let key = run_key(rule, event_key);
    Builder::new(&run_pk(org, &key), "rule_run", org.as_str())
        .str("run_key", &key)
        .str("rule_id", rule)
        .str("event_key", event_key)
        .str("state", state)
        .num("attempts", 1)
        .str("at", at_str(now))
        .str("updated_at", at_str(now))
        .list(&org.pk("RUNS"), &format!("{}#{key}", at_str(now)))
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
    /// `sent`, `failed` or `needs_check`: nothing more to do.
    Settled(String),
}

pub async fn claim(
    store: &Store,
    org: &OrgId,
    rule_id: &str,
    event_key: &str,
    now: DateTime<Utc>,
) -> Result<Claim, StoreError> {
    if store
        .put_new(run_item(org, rule_id, event_key, "sending", now))
        .await?
    {
        return Ok(Claim::Fresh);
    }
    let pk = run_pk(org, &run_key(rule_id, event_key));
    let stored = store.get(&pk).await?.unwrap_or_default();
    match stored.opt_str("state").unwrap_or("sending") {
        "sending" => Ok(Claim::Unclear),
        "not_sent" => {
            let moved = transition(store, &pk, "not_sent", "sending", 1, now).await?;
            Ok(if moved { Claim::Retry } else { Claim::Unclear })
        }
        other => Ok(Claim::Settled(other.to_owned())),
    }
}

/// Settles a `sending` run as `state` (`sent`, `not_sent`, `failed`, `needs_check`). A run that a
/// concurrent attempt already settled keeps that state.
pub async fn set_state(
    store: &Store,
    org: &OrgId,
    rule_id: &str,
    event_key: &str,
    state: &str,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let pk = run_pk(org, &run_key(rule_id, event_key));
    if !transition(store, &pk, "sending", state, 0, now).await? {
        tracing::warn!(run = %pk, state, "run was no longer sending; its state is kept");
    }
    Ok(())
}

/// Moves the run from `from` to `to` (adding `attempts`); `Ok(false)` when it was not in `from`.
async fn transition(
    store: &Store,
    pk: &str,
    from: &str,
    to: &str,
    attempts: u32,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let update = store
        .client
        .update_item()
        .table_name(&store.table)
        .set_key(Some(Store::key(pk)))
        .update_expression("SET #s = :to, updated_at = :at ADD attempts :n")
        .condition_expression("#s = :from")
        .expression_attribute_names("#s", "state")
        .expression_attribute_values(":to", s(to))
        .expression_attribute_values(":from", s(from))
        .expression_attribute_values(":at", s(at_str(now)))
        .expression_attribute_values(":n", n(attempts));
    match update.send().await {
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

pub async fn run_state(
    store: &Store,
    org: &OrgId,
    rule_id: &str,
    event_key: &str,
) -> Result<Option<String>, StoreError> {
    let item = store
        .get(&run_pk(org, &run_key(rule_id, event_key)))
        .await?;
    Ok(item.and_then(|i| i.opt_str("state").map(str::to_owned)))
}
