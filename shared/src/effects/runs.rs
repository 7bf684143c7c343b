//! The state of an outgoing-message run, moved only by conditional writes:
//! `sending` → `sent` | `not_sent` | `failed` | `needs_check`; `not_sent` → `sending` again.
//! One attempt holds a `sending` run at a time (a lease token with an expiry).

use crate::ids::{EventKey, OrgId};
use crate::store::item::{n, s, tag_name, Builder, Read};
use crate::store::{Cond, Item, PutNew, Step, Store, StoreError, Transacted, Update};
use crate::time;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Where a run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
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
    /// A run a bound stopped before it acted (`reason`: `reply_cap`, `ai_budget`).
    Skipped,
}

/// The run's identity: `{rule_id}:{event_key}`.
pub fn run_key(rule_id: &str, event_key: &EventKey) -> String {
    format!("{rule_id}:{event_key}")
}

/// The run's item key.
pub fn run_pk(org: &OrgId, run_key: &str) -> String {
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
        .index(
            &crate::store::lists::runs_pk(org, &tag_name(&state)),
            &format!("{}#{key}", time::format(now)),
        )
        .build()
}

/// An update that moves the run to `state`, and onto the operator's list of runs in it.
pub(crate) fn moved_to(
    update: Update,
    org: &OrgId,
    run_key: &str,
    state: RunState,
    now: DateTime<Utc>,
) -> Update {
    update
        .set("state", s(tag_name(&state)))
        .set("updated_at", s(time::format(now)))
        .set(
            "gsi2pk",
            s(crate::store::lists::runs_pk(org, &tag_name(&state))),
        )
        .set("gsi2sk", s(format!("{}#{run_key}", time::format(now))))
}

/// Applies `update` (a `moved_to` held to the run being in `from`) and, in the same
/// transaction, the organisation's tally of runs that need a person (`counters::run_moved`):
/// `Ok(false)` when the condition did not hold.
async fn move_run(
    store: &Store,
    (org, pk): (&OrgId, &str),
    update: Update,
    from: RunState,
    to: RunState,
) -> Result<bool, StoreError> {
    let tally = crate::store::counters::run_moved(org, pk, &tag_name(&from), &tag_name(&to));
    if tally.is_empty() {
        return store.update_if(pk, &update).await;
    }
    let mut steps = vec![Step::Update {
        pk: pk.to_owned(),
        update,
    }];
    steps.extend(tally);
    match store.transact_counted(steps).await? {
        Transacted::Done => Ok(true),
        Transacted::Refused { .. } => Ok(false),
        Transacted::Contended => Err(StoreError::Contended { pk: pk.to_owned() }),
    }
}

/// The states a person may decide a run from, each with its condition: `needs_check`, or
/// `sending` under a lease that ran out (an attempt, a person's resend among them, that died
/// before it could settle). Tried one at a time, so each move knows the state it leaves.
fn undecided(now: DateTime<Utc>) -> [(RunState, Cond); 2] {
    [
        (
            RunState::NeedsCheck,
            Cond::Equals("state".into(), s(tag_name(&RunState::NeedsCheck))),
        ),
        (
            RunState::Sending,
            Cond::All(vec![
                Cond::Equals("state".into(), s(tag_name(&RunState::Sending))),
                Cond::AbsentOrBefore("lease_until".into(), s(time::format(now))),
            ]),
        ),
    ]
}

/// One attempt's hold on a run: while it lasts, only its holder may send or settle the run.
/// A second copy of the trigger finds the run `Busy` and comes back later; an attempt that died
/// leaves a lease that runs out, and the next attempt takes the run over as `Unclear`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    token: String,
}

impl Lease {
    fn new() -> Self {
        Self {
            token: hex::encode(crate::ids::random_bytes::<8>()),
        }
    }

    /// The token, as a person's resend carries it to the worker.
    pub fn token(&self) -> &str {
        &self.token
    }
}

/// Where a run stands when a worker picks it up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Claim {
    /// First attempt: the run is now `sending`, held by this lease.
    Fresh(Lease),
    /// An earlier attempt is known not to have been delivered; the run is `sending` again.
    Retry(Lease),
    /// An earlier attempt's outcome is unknown (its lease ran out while `sending`): do not send
    /// blindly.
    Unclear(Lease),
    /// Another attempt holds the run right now: neither send nor settle; try again later.
    Busy,
    /// `sent`, `failed`, `needs_check` or `done`: nothing more to do.
    Settled(RunState),
}

/// The outgoing request a run makes, kept on the run so a person can have it sent once more
/// exactly as it was (`ops`).
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    pub integration_id: &'a str,
    pub body: &'a serde_json::Value,
}

/// Claims the run for one attempt that may take up to `hold`; a run made now keeps `request`.
pub async fn claim(
    store: &Store,
    org: &OrgId,
    rule_id: &str,
    event_key: &EventKey,
    now: DateTime<Utc>,
    hold: chrono::Duration,
    request: Option<Request<'_>>,
) -> Result<Claim, StoreError> {
    let lease = Lease::new();
    let mut item = run_item(org, rule_id, event_key, RunState::Sending, now);
    item.insert("lease".into(), s(&lease.token));
    item.insert("lease_until".into(), s(time::format(now + hold)));
    if let Some(r) = request {
        item.insert("integration_id".into(), s(r.integration_id));
        item.insert("request".into(), s(r.body.to_string()));
    }
    let stored = match store.put_new(item).await? {
        PutNew::Created => return Ok(Claim::Fresh(lease)),
        // Its own put, whose answer was lost and whose retry found it: this attempt's.
        PutNew::Existing(item) if item.opt_str("lease") == Some(lease.token.as_str()) => {
            return Ok(Claim::Fresh(lease))
        }
        PutNew::Existing(item) => item,
    };
    let pk = run_pk(org, &run_key(rule_id, event_key));
    let state_is = |state: RunState| Cond::Equals("state".into(), s(tag_name(&state)));
    let (from, claimed): (Cond, fn(Lease) -> Claim) = match stored.tag_of("state")? {
        // Taken over only when the holder's lease has run out.
        RunState::Sending => (
            Cond::All(vec![
                state_is(RunState::Sending),
                Cond::AbsentOrBefore("lease_until".into(), s(time::format(now))),
            ]),
            Claim::Unclear,
        ),
        RunState::NotSent => (state_is(RunState::NotSent), Claim::Retry),
        other => return Ok(Claim::Settled(other)),
    };
    let key = run_key(rule_id, event_key);
    let update = Update::new()
        .set("lease", s(&lease.token))
        .set("lease_until", s(time::format(now + hold)))
        .add("attempts", n(1));
    let update = moved_to(update, org, &key, RunState::Sending, now).when(from);
    if store.update_if(&pk, &update).await? {
        return Ok(claimed(lease));
    }
    // Refused: another attempt holds it, unless the refusal answered a retry of this one's own
    // update, whose first answer was lost (the run holds this lease).
    let now_held = store.get(&pk).await?;
    let ours = now_held.is_some_and(|i| i.opt_str("lease") == Some(lease.token.as_str()));
    Ok(match ours {
        true => claimed(lease),
        false => Claim::Busy,
    })
}

/// The update that settles the run this lease holds as `state`: only while it is `sending`
/// under this lease.
fn settle(org: &OrgId, key: &str, lease: &Lease, state: RunState, now: DateTime<Utc>) -> Update {
    let update = Update::new().set("lease_until", s(time::format(now)));
    moved_to(update, org, key, state, now).when(Cond::All(vec![
        Cond::Equals("state".into(), s(tag_name(&RunState::Sending))),
        Cond::Equals("lease".into(), s(&lease.token)),
    ]))
}

/// Settling the run as one step of a transaction that also writes what the run produced (a
/// reply stored with its run's move to `sent`): both or neither. Only for a state no tally
/// counts (`sent`, `done`): a move into one that does goes through `set_state`.
pub fn settle_step(
    org: &OrgId,
    rule_id: &str,
    event_key: &EventKey,
    lease: &Lease,
    state: RunState,
    now: DateTime<Utc>,
) -> crate::store::Step {
    let key = run_key(rule_id, event_key);
    crate::store::Step::Update {
        pk: run_pk(org, &key),
        update: settle(org, &key, lease, state, now),
    }
}

/// Whether a stored run is one a person may decide now (see `undecided`).
pub fn is_undecided(item: &Item, now: DateTime<Utc>) -> bool {
    match item.tag_of::<RunState>("state") {
        Ok(RunState::NeedsCheck) => true,
        Ok(RunState::Sending) => item
            .opt_str("lease_until")
            .is_none_or(|until| until < time::format(now).as_str()),
        _ => false,
    }
}

/// A person's decision to send a `needs_check` run once more: the run moves to `sending` under
/// a new lease, or the state it is in is returned.
pub async fn take_checked(
    store: &Store,
    org: &OrgId,
    rule_id: &str,
    event_key: &EventKey,
    now: DateTime<Utc>,
    hold: chrono::Duration,
) -> Result<Result<Lease, Option<RunState>>, StoreError> {
    let lease = Lease::new();
    let key = run_key(rule_id, event_key);
    let pk = run_pk(org, &key);
    for (from, held) in undecided(now) {
        let update = Update::new()
            .set("lease", s(&lease.token))
            .set("lease_until", s(time::format(now + hold)))
            .add("attempts", n(1));
        let update = moved_to(update, org, &key, RunState::Sending, now).when(held);
        if move_run(store, (org, &pk), update, from, RunState::Sending).await? {
            return Ok(Ok(lease));
        }
    }
    Ok(Err(run_state(store, org, rule_id, event_key).await?))
}

/// The worker's turn of a person's resend: the run moves from the decision's lease (`token`)
/// to a new one that holds it for `hold`, while it is still `sending` under that lease. `None`
/// when it is not: a copy of the resend message, or a decision whose lease ran out and was
/// taken over; nothing is sent then.
pub async fn take_resend(
    store: &Store,
    org: &OrgId,
    rule_id: &str,
    event_key: &EventKey,
    token: &str,
    now: DateTime<Utc>,
    hold: chrono::Duration,
) -> Result<Option<Lease>, StoreError> {
    let lease = Lease::new();
    let key = run_key(rule_id, event_key);
    let update = Update::new()
        .set("lease", s(&lease.token))
        .set("lease_until", s(time::format(now + hold)))
        .when(Cond::All(vec![
            Cond::Equals("state".into(), s(tag_name(&RunState::Sending))),
            Cond::Equals("lease".into(), s(token)),
        ]));
    Ok(store
        .update_if(&run_pk(org, &key), &update)
        .await?
        .then_some(lease))
}

/// A person checked the target and found the message there: `needs_check` → `sent`, nothing
/// sent. The state the run is in otherwise.
pub async fn settle_checked(
    store: &Store,
    org: &OrgId,
    rule_id: &str,
    event_key: &EventKey,
    now: DateTime<Utc>,
) -> Result<Result<RunState, Option<RunState>>, StoreError> {
    let key = run_key(rule_id, event_key);
    let pk = run_pk(org, &key);
    for (from, held) in undecided(now) {
        let update = moved_to(Update::new(), org, &key, RunState::Sent, now).when(held);
        if move_run(store, (org, &pk), update, from, RunState::Sent).await? {
            return Ok(Ok(RunState::Sent));
        }
    }
    Ok(Err(run_state(store, org, rule_id, event_key).await?))
}

/// Settles the run this lease holds as `state` (`sent`, `not_sent`, `failed`, `needs_check`).
/// A run no longer held by this lease (taken over after it ran out) keeps what its holder set.
pub async fn set_state(
    store: &Store,
    org: &OrgId,
    rule_id: &str,
    event_key: &EventKey,
    lease: &Lease,
    state: RunState,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let key = run_key(rule_id, event_key);
    let pk = run_pk(org, &key);
    let update = settle(org, &key, lease, state, now);
    let settled = move_run(store, (org, &pk), update, RunState::Sending, state).await?;
    if !settled {
        tracing::warn!(run = %pk, ?state, "the run is no longer held by this attempt; its state is kept");
    }
    Ok(settled)
}

/// Settles the run this lease holds as `skipped`, keeping why (`reply_cap`, `ai_budget`): a
/// bound stopped it before it acted.
pub async fn skip(
    store: &Store,
    (org, rule_id, event_key): (&OrgId, &str, &EventKey),
    lease: &Lease,
    why: &str,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let pk = run_pk(org, &run_key(rule_id, event_key));
    let held = Cond::Equals("lease".into(), s(lease.token()));
    store
        .update_if(&pk, &Update::new().set("reason", s(why)).when(held))
        .await?;
    set_state(
        store,
        org,
        rule_id,
        event_key,
        lease,
        RunState::Skipped,
        now,
    )
    .await
}

/// A delivery confirmed after this attempt lost its lease: the run becomes `sent` from
/// `sending`, `not_sent` or `needs_check` (whoever holds it), so it is never sent again and a
/// check already asked for is answered.
pub async fn delivered(
    store: &Store,
    org: &OrgId,
    rule_id: &str,
    event_key: &EventKey,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let key = run_key(rule_id, event_key);
    let pk = run_pk(org, &key);
    for from in [RunState::Sending, RunState::NotSent, RunState::NeedsCheck] {
        let update = moved_to(Update::new(), org, &key, RunState::Sent, now)
            .when(Cond::Equals("state".into(), s(tag_name(&from))));
        if move_run(store, (org, &pk), update, from, RunState::Sent).await? {
            return Ok(true);
        }
    }
    Ok(false)
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
