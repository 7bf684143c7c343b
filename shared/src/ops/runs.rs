//! Automation runs as the operator sees them, by state, and a person's decision on a run that
//! `needs_check`: `delivered` settles it as sent and sends nothing; `resend` makes exactly one
//! more attempt with the run's own request and idempotency key, then settles it by what the
//! target answered (asking the target's status URL when the answer is unclear). Both start
//! with a conditional move out of `needs_check`, so a second click finds the run decided.

use super::{ids, runs_pk};
use crate::effects::automation::idempotency_key;
use crate::effects::outbound::{Outbound, Sent, State};
use crate::effects::runs::{self, RunState};
use crate::ids::{EventKey, IntegrationId, OrgId};
use crate::integrations::{self, Settings};
use crate::store::item::{tag_name, Read};
use crate::store::{Item, Store, StoreError};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

/// The states runs are listed in.
pub const STATES: [&str; 6] = [
    "needs_check",
    "failed",
    "sending",
    "not_sent",
    "sent",
    "done",
];

pub fn to_json(item: &Item) -> Value {
    json!({
        "id": ids::encode(item.opt_str("pk").unwrap_or_default()),
        "org": item.opt_str("org"),
        "key": item.opt_str("run_key"),
        "rule_id": item.opt_str("rule_id"),
        "event_key": item.opt_str("event_key"),
        "state": item.opt_str("state"),
        "attempts": item.u64_of("attempts").ok(),
        "at": item.opt_str("at"),
        "updated_at": item.opt_str("updated_at"),
        "resendable": item.opt_str("request").is_some(),
        "lease_until": item.opt_str("lease_until"),
    })
}

pub async fn page(
    store: &Store,
    org: &OrgId,
    state: &str,
    limit: i32,
    cursor: Option<&str>,
) -> Result<(Vec<Value>, Option<String>), StoreError> {
    super::page_of(store, &runs_pk(org, state), limit, cursor, to_json).await
}

/// How a decision ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Decided {
    /// The run's state after the decision.
    Now(RunState),
    /// The run was not `needs_check` (decided before): its state.
    Already(Option<RunState>),
    NotFound,
    /// `resend` of a run whose request was not kept (a reply, or a run from before requests
    /// were kept): only `delivered` can settle it.
    NotResendable,
}

/// What a person decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Delivered,
    Resend,
}

struct Run {
    rule_id: String,
    event_key: EventKey,
    item: Item,
}

async fn read(store: &Store, pk: &str) -> Result<Option<Run>, StoreError> {
    let Some(item) = store.get(pk).await? else {
        return Ok(None);
    };
    let event_key = EventKey::parse(item.str_of("event_key")?)
        .ok_or_else(|| crate::store::item::malformed(&item, "event_key"))?;
    Ok(Some(Run {
        rule_id: item.str_of("rule_id")?.to_owned(),
        event_key,
        item,
    }))
}

pub async fn decide(
    store: &Store,
    outbound: &Outbound,
    org: &OrgId,
    pk: &str,
    decision: Decision,
    now: DateTime<Utc>,
) -> Result<Decided, StoreError> {
    let Some(run) = read(store, pk).await? else {
        return Ok(Decided::NotFound);
    };
    if !runs::is_undecided(&run.item, now) {
        let state = run.item.tag_of::<RunState>("state").ok();
        return Ok(Decided::Already(state));
    }
    match decision {
        Decision::Delivered => {
            let settled =
                runs::settle_checked(store, org, &run.rule_id, &run.event_key, now).await?;
            Ok(settled.map_or_else(Decided::Already, Decided::Now))
        }
        Decision::Resend => resend(store, outbound, org, &run, now).await,
    }
}

async fn resend(
    store: &Store,
    outbound: &Outbound,
    org: &OrgId,
    run: &Run,
    now: DateTime<Utc>,
) -> Result<Decided, StoreError> {
    let request = run
        .item
        .opt_str("request")
        .and_then(|r| serde_json::from_str::<Value>(r).ok());
    let target = match run.item.opt_str("integration_id").map(IntegrationId::parse) {
        Some(Ok(id)) if id.org == *org => integrations::get(store, &id).await?,
        _ => None,
    };
    let (Some(body), Some(Settings::Outbound(target))) = (request, target.map(|t| t.settings))
    else {
        return Ok(Decided::NotResendable);
    };
    let hold = chrono::Duration::from_std(outbound.timeout * 2 + std::time::Duration::from_secs(5))
        .unwrap_or(chrono::Duration::seconds(30));
    let lease =
        match runs::take_checked(store, org, &run.rule_id, &run.event_key, now, hold).await? {
            Ok(lease) => lease,
            Err(state) => return Ok(Decided::Already(state)),
        };
    let run_key = crate::effects::automation::run_key(&run.rule_id, &run.event_key);
    let key = idempotency_key(org, &run_key);
    let state = match outbound.send(&target, &key, &body, now.timestamp()).await {
        Sent::Delivered => RunState::Sent,
        Sent::Rejected(_) => RunState::Failed,
        // Not sent, or sent with no word: a person looks again, nothing is sent by itself.
        Sent::NotDelivered(_) => RunState::NeedsCheck,
        Sent::Unclear(_) => match outbound.check(&target, &key).await {
            State::Delivered => RunState::Sent,
            State::NotDelivered | State::Unknown => RunState::NeedsCheck,
        },
    };
    tracing::info!(run = %run_key, state = %tag_name(&state), "resent by a person");
    runs::set_state(store, org, &run.rule_id, &run.event_key, &lease, state, now).await?;
    Ok(Decided::Now(state))
}
