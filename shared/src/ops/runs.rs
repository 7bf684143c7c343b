//! Automation runs as the operator sees them, by state, and a person's decision on a run that
//! `needs_check`: `delivered` settles it as sent and sends nothing; `resend` queues exactly one
//! more attempt for the automation worker, which sends the run's own request with its
//! idempotency key and settles it by what the target answered (asking the target's status URL
//! when the answer is unclear). Both start with a conditional move out of `needs_check`, so a
//! second click finds the run decided.

use super::answers::RunRow;
use super::{ids, runs_pk};
use crate::effects::queue::Publisher;
use crate::effects::runs::{self, RunState};
use crate::effects::{Consequence, Resend};
use crate::ids::{EventKey, IntegrationId, OrgId};
use crate::integrations::{self, Settings};
use crate::store::item::Read;
use crate::store::{Item, Store, StoreError, Written};
use chrono::{DateTime, Utc};
use serde_json::Value;

/// The states runs are listed in.
pub const STATES: [&str; 7] = [
    "needs_check",
    "failed",
    "sending",
    "not_sent",
    "sent",
    "done",
    "skipped",
];

/// A run as the list shows it.
pub fn view(item: &Item) -> RunRow {
    let text = |name: &str| item.opt_str(name).map(str::to_owned);
    let json = |name: &str| {
        item.opt_str(name)
            .and_then(|t| serde_json::from_str::<Value>(t).ok())
    };
    RunRow {
        id: ids::encode(item.opt_str("pk").unwrap_or_default()),
        org: text("org"),
        key: text("run_key"),
        rule_id: text("rule_id"),
        event_key: text("event_key"),
        state: text("state"),
        attempts: item.u64_of("attempts").ok(),
        at: text("at"),
        updated_at: text("updated_at"),
        resendable: item.opt_str("request").is_some(),
        lease_until: text("lease_until"),
        tokens: json("tokens"),
        reason: text("reason"),
        calls: json("calls"),
    }
}

pub async fn page(
    store: &Store,
    org: &OrgId,
    state: &str,
    limit: i32,
    cursor: Option<&str>,
) -> Result<(Vec<RunRow>, Option<String>), StoreError> {
    super::page_of(store, &runs_pk(org, state), limit, cursor, view).await
}

/// What a person decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = RunDecision)]
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

/// How long a person's resend holds its run: the wait in the automation queue and the worker's
/// call with its check. A resend that never settles is the person's to decide again after it.
pub const RESEND_HOLD: chrono::Duration = chrono::Duration::minutes(5);

/// Why a person's decision on a run was not taken.
#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("no such run")]
    NotFound,
    /// The run was not `needs_check` (decided before): its state.
    #[error("the run was decided before")]
    Already(Option<RunState>),
    /// `resend` of a run whose request was not kept (a reply, or a run from before requests
    /// were kept): only `delivered` can settle it.
    #[error("the run's request was not kept")]
    NotResendable,
    /// The resend message could not be queued; the run is `needs_check` again.
    #[error("the resend of {0} could not be queued")]
    Unqueued(String),
}

/// A person's decision on a run that needs a check: the run's state after it, new (`sent`, or
/// `sending` when a resend was queued: the automation worker sends it and settles it).
pub async fn decide(
    store: &Store,
    publisher: &Publisher,
    org: &OrgId,
    pk: &str,
    decision: Decision,
    now: DateTime<Utc>,
) -> Result<Written<RunState>, DecideError> {
    let Some(run) = read(store, pk).await? else {
        return Err(DecideError::NotFound);
    };
    if !runs::is_undecided(&run.item, now) {
        let state = run.item.tag_of::<RunState>("state").ok();
        return Err(DecideError::Already(state));
    }
    match decision {
        Decision::Delivered => {
            let settled =
                runs::settle_checked(store, org, &run.rule_id, &run.event_key, now).await?;
            settled.map(Written::New).map_err(DecideError::Already)
        }
        Decision::Resend => resend(store, publisher, org, &run, now).await,
    }
}

/// The decision to resend, taken here and carried out by the automation worker: the run moves
/// to `sending` under a lease held for `RESEND_HOLD`, and one `resend` message names that
/// lease. The operator's view never opens the target's secret. A message that cannot be queued
/// gives the run back to `needs_check`, so the person may click again.
async fn resend(
    store: &Store,
    publisher: &Publisher,
    org: &OrgId,
    run: &Run,
    now: DateTime<Utc>,
) -> Result<Written<RunState>, DecideError> {
    let kept = run.item.opt_str("request").is_some();
    let target = match run.item.opt_str("integration_id").map(IntegrationId::parse) {
        Some(Ok(id)) if id.org == *org => integrations::get_sealed(store, &id).await?,
        _ => None,
    };
    if !kept || !matches!(target.map(|t| t.settings), Some(Settings::Outbound(_))) {
        return Err(DecideError::NotResendable);
    }
    let lease = match runs::take_checked(store, org, &run.rule_id, &run.event_key, now, RESEND_HOLD)
        .await?
    {
        Ok(lease) => lease,
        Err(state) => return Err(DecideError::Already(state)),
    };
    let message = Consequence::Resend(Resend {
        org: org.clone(),
        rule_id: run.rule_id.clone(),
        event_key: run.event_key.clone(),
        lease: lease.token().to_owned(),
        at: now,
    });
    let published = publisher.publish(std::slice::from_ref(&message)).await;
    if published.as_ref().map_or(true, |p| p.sent != 1) {
        runs::set_state(
            store,
            org,
            &run.rule_id,
            &run.event_key,
            &lease,
            RunState::NeedsCheck,
            now,
        )
        .await?;
        return Err(DecideError::Unqueued(message.key()));
    }
    tracing::info!(run = %message.key(), "resend queued by a person");
    Ok(Written::New(RunState::Sending))
}
