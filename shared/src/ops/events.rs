//! Stored events as the operator sees them: how many of a kind came today and this week (from the
//! organisation's counters), the latest ones with each consequence they imply
//! and whether it happened (derived from the event item as the fan-out derives it, then read by
//! key in one batch), and a replay that sends them again.

use super::{events_pk, ids, EventKind};
use crate::effects::queue::{Publisher, QueueError};
use crate::effects::{activity, automation, derive, notify, Consequence};
use crate::ids::OrgId;
use crate::store::counters::Counted;
use crate::store::item::Read;
use crate::store::{Index, Item, Store, StoreError};
use chrono::{DateTime, Duration, Utc};
use serde_json::{json, Value};

/// How many of an organisation's latest events of a kind `waiting` looks at.
pub const WAITING_WINDOW: i32 = 100;

/// One kind's figures: stored today (UTC) and in the last 7 days, and how many of the latest
/// [`WAITING_WINDOW`] still miss a consequence.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counts {
    pub today: u64,
    pub week: u64,
    pub waiting: u64,
}

impl std::ops::AddAssign for Counts {
    fn add_assign(&mut self, other: Self) {
        self.today += other.today;
        self.week += other.week;
        self.waiting += other.waiting;
    }
}

/// One kind's figures: today's and the week's from the organisation's counters
/// (`store::counters`, read once for every kind), `waiting` from its latest events.
pub async fn counts(
    store: &Store,
    org: &OrgId,
    kind: EventKind,
    counted: &Counted,
    now: DateTime<Utc>,
) -> Result<Counts, StoreError> {
    let midnight = now
        .date_naive()
        .and_hms_opt(0, 0, 0)
        .expect("midnight")
        .and_utc();
    let list = events_pk(org, kind);
    let latest = store
        .page_in(Index::States, &list, None, true, WAITING_WINDOW, None)
        .await?;
    let states = consequence_states(store, org, &latest.0).await?;
    let waiting = states
        .iter()
        .filter(|cs| cs.iter().any(|c| !c.done))
        .count() as u64;
    Ok(Counts {
        today: counted.since(kind, midnight),
        week: counted.since(kind, midnight - Duration::days(6)),
        waiting,
    })
}

/// One consequence an event implies, and whether it happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct State {
    pub kind: &'static str,
    pub key: String,
    pub done: bool,
}

impl State {
    pub fn to_json(&self) -> Value {
        json!({"kind": self.kind, "key": self.key, "state": if self.done { "done" } else { "missing" }})
    }
}

/// The items a consequence leaves when it happened: (kind, shown key, item keys). A team
/// notification is one copy per member of `team`.
fn marks(c: &Consequence, team: &[String]) -> Option<(&'static str, String, Vec<String>)> {
    match c {
        Consequence::Notification(n) => {
            let copies = notify::copies(n, team);
            Some((
                "notification",
                n.key.to_string(),
                copies.into_iter().map(|(pk, _)| pk).collect(),
            ))
        }
        Consequence::Activity(a) => Some(("activity", c.key(), vec![activity::entry_pk(a)])),
        Consequence::Trigger(f) => Some(("rule_run", c.key(), vec![automation::handled_pk(f)])),
        // A bank credit's match shows on the row itself; a resend is no event's consequence.
        Consequence::BankCredit(_) | Consequence::Resend(_) | Consequence::Assisted(_) => None,
    }
}

/// The item whose consequences an event's are: an incoming SMS's are its conversation message's
/// (the stream derives them from it); every other event's are its own.
fn carried_message(e: &Item) -> Option<String> {
    let received = e.opt_str("kind") == Some(crate::ledger::ACK_KIND)
        && e.opt_str("type") == Some("sms.received");
    if !received {
        return None;
    }
    let org = OrgId::parse(e.opt_str("org")?).ok()?;
    Some(crate::messages::message_pk(
        &org,
        e.opt_str("integration_id")?,
        e.opt_str("message_id")?,
    ))
}

/// The item each event carries (`carried_message`), read in one batch.
async fn carriers(store: &Store, events: &[Item]) -> Result<Vec<Option<Item>>, StoreError> {
    let wanted: Vec<Option<String>> = events.iter().map(carried_message).collect();
    let pks: Vec<String> = wanted.iter().flatten().cloned().collect();
    if pks.is_empty() {
        return Ok(vec![None; events.len()]);
    }
    let found = store.get_many(&pks).await?;
    let mut found = found.into_iter();
    Ok(wanted
        .iter()
        .map(|w| w.as_ref().and_then(|_| found.next().flatten()))
        .collect())
}

/// Each event's consequences and whether each happened: one read of the team, one batch of
/// reads for every item the consequences leave.
pub async fn consequence_states(
    store: &Store,
    org: &OrgId,
    events: &[Item],
) -> Result<Vec<Vec<State>>, StoreError> {
    let carriers = carriers(store, events).await?;
    let derived: Vec<Vec<Consequence>> = events
        .iter()
        .zip(&carriers)
        .map(|(e, carrier)| derive::consequences(carrier.as_ref().unwrap_or(e)).unwrap_or_default())
        .collect();
    let team_needed = derived
        .iter()
        .flatten()
        .any(|c| matches!(c, Consequence::Notification(n) if n.recipient.is_none()));
    let team: Vec<String> = match team_needed {
        true => crate::orgs::members(store, org)
            .await?
            .into_iter()
            .map(|m| m.user_id)
            .collect(),
        false => Vec::new(),
    };
    let marked: Vec<Vec<(&str, String, Vec<String>)>> = derived
        .iter()
        .map(|cs| cs.iter().filter_map(|c| marks(c, &team)).collect())
        .collect();
    let pks: Vec<String> = marked
        .iter()
        .flatten()
        .flat_map(|(_, _, pks)| pks.iter().cloned())
        .collect();
    let found = store.get_many(&pks).await?;
    let present: std::collections::HashSet<&String> = pks
        .iter()
        .zip(&found)
        .filter(|(_, f)| f.is_some())
        .map(|(pk, _)| pk)
        .collect();
    Ok(marked
        .into_iter()
        .map(|cs| {
            cs.into_iter()
                .map(|(kind, key, pks)| State {
                    kind,
                    key,
                    done: pks.iter().all(|pk| present.contains(pk)),
                })
                .collect()
        })
        .collect())
}

/// An event as the list shows it.
fn to_json(kind: EventKind, item: &Item, states: &[State]) -> Value {
    let position = item.opt_str("gsi2sk").unwrap_or_default();
    let (at, key) = position.split_once('#').unwrap_or((position, ""));
    json!({
        "id": ids::encode(item.opt_str("pk").unwrap_or_default()),
        "org": item.opt_str("org"),
        "key": key,
        "kind": kind.name(),
        "at": at,
        "outcome": item.opt_str("outcome").unwrap_or("stored"),
        "consequences": states.iter().map(State::to_json).collect::<Vec<_>>(),
    })
}

/// A page of an organisation's events of a kind, newest first, with their consequences.
pub async fn page(
    store: &Store,
    org: &OrgId,
    kind: EventKind,
    limit: i32,
    cursor: Option<&str>,
) -> Result<(Vec<Value>, Option<String>), StoreError> {
    let (items, next) = store
        .page_in(
            Index::States,
            &events_pk(org, kind),
            None,
            true,
            limit,
            cursor,
        )
        .await?;
    let states = consequence_states(store, org, &items).await?;
    let listed = items
        .iter()
        .zip(&states)
        .map(|(item, s)| to_json(kind, item, s))
        .collect();
    Ok((listed, next))
}

/// Why a replay did not happen.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Queue(#[from] QueueError),
    #[error("no such event")]
    NotFound,
}

/// Derives the stored event's consequences again and sends them all: what already happened is
/// absorbed by its key, what was missing happens now. Returns how many were sent.
pub async fn replay(store: &Store, publisher: &Publisher, pk: &str) -> Result<usize, ReplayError> {
    let mut item = store.get(pk).await?.ok_or(ReplayError::NotFound)?;
    // An incoming SMS's consequences are its conversation message's: replay those.
    if let Some(message) = carried_message(&item) {
        item = store.get(&message).await?.ok_or(ReplayError::NotFound)?;
    }
    let consequences = derive::consequences(&item)?;
    Ok(publisher.publish(&consequences).await?.sent)
}
