//! What an event waits for: each consequence it implies, whether it happened (read from the
//! item the consequence leaves when it happens: the operator's list), and the settling of the
//! event's waiting mark as its consequences happen.
//!
//! Exact under at-least-once delivery and concurrency. What tells people of an event the
//! fan-out writes at once (`effects::told`): the event does not wait on it. For what a queue
//! carries, the fan-out puts the keys (`pending`) on the event's waiting mark before it sends
//! them (`store::counters::wait_on`, making the mark when there is none); a held event's are
//! put in its hold's transaction. Every worker, after applying a message's consequences (or
//! finding them applied: a key shared by several events is settled for each), takes their keys
//! out of the set in one conditional update (held to one of them being in it, so a redelivery
//! takes nothing twice) that answers the set as it is after; the one that leaves it empty
//! deletes the mark on the condition that it is there. A worker cut off between the two finds,
//! on its redelivery, the keys already out: it deletes a mark whose set is empty. So an event
//! that waits costs the mark's put, one update per message of tracked consequences but the
//! last, and one delete; one that waits on no queue costs nothing here.

use super::{activity, automation, derive, notify, ActivityLine, Consequence, Trigger};
use crate::ids::OrgId;
use crate::store::counters;
use crate::store::item::{s, Read};
use crate::store::{Cond, Item, Store, StoreError, Update};
use serde_json::{json, Value};
use std::collections::HashMap;

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

/// The items a consequence leaves when it happened: all of `pks`, or for a trigger no rule
/// took, the event's first activity line noting it (`activity::NO_RULE_FOR`).
struct Left {
    kind: &'static str,
    key: String,
    pks: Vec<String>,
    or_noted: Option<(String, Trigger)>,
}

impl Left {
    fn all(kind: &'static str, key: String, pks: Vec<String>) -> Self {
        Self {
            kind,
            key,
            pks,
            or_noted: None,
        }
    }

    fn read(&self) -> impl Iterator<Item = &String> {
        self.pks
            .iter()
            .chain(self.or_noted.iter().map(|(pk, _)| pk))
    }

    /// Whether it happened, from the items read (`found`, by key).
    fn done(&self, found: &HashMap<&String, &Item>) -> bool {
        // A team notification of a team of none has no copy: it has not happened.
        let all = !self.pks.is_empty() && self.pks.iter().all(|pk| found.contains_key(pk));
        let noted = self.or_noted.as_ref().is_some_and(|(pk, trigger)| {
            found
                .get(pk)
                .is_some_and(|line| activity::notes_no_rule(line, *trigger))
        });
        all || noted
    }
}

/// The first activity line among an event's consequences: the one that notes the triggers no
/// rule took when the fan-out writes it (`activity::append_noting`).
pub fn noting_line(consequences: &[Consequence]) -> Option<&ActivityLine> {
    consequences.iter().find_map(|c| match c {
        Consequence::Activity(line) => Some(line),
        _ => None,
    })
}

/// What a consequence of an event whose consequences are `all` leaves when it happened. A team
/// notification is one copy per member of `team`. Only tracked consequences leave any.
fn marks(c: &Consequence, all: &[Consequence], team: &[String]) -> Option<Left> {
    match c {
        Consequence::Notification(n) => {
            let copies = notify::copies(n, team);
            Some(Left::all(
                "notification",
                n.key.to_string(),
                copies.into_iter().map(|(pk, _)| pk).collect(),
            ))
        }
        Consequence::Activity(a) => {
            Some(Left::all("activity", c.key(), vec![activity::entry_pk(a)]))
        }
        Consequence::Trigger(f) => Some(Left {
            or_noted: noting_line(all).map(|line| (activity::entry_pk(line), f.trigger)),
            ..Left::all("rule_run", c.key(), vec![automation::handled_pk(f)])
        }),
        // A bank credit's match shows on the row itself; a resend is no event's consequence.
        Consequence::BankCredit(_)
        | Consequence::Lookalike(_)
        | Consequence::Unkeep(_)
        | Consequence::Resend(_)
        | Consequence::Assisted(_) => None,
    }
}

/// The item whose consequences an event's are, when it is not the event's own: an incoming
/// SMS's are its conversation message's (the stream derives them from it).
pub fn carried_message(e: &Item) -> Option<String> {
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

/// The items that carry each event's consequences (`carried_message`, or the event itself),
/// the carried ones read in one batch.
pub async fn carriers(store: &Store, events: &[Item]) -> Result<Vec<Item>, StoreError> {
    let wanted: Vec<Option<String>> = events.iter().map(carried_message).collect();
    let pks: Vec<String> = wanted.iter().flatten().cloned().collect();
    let mut found = match pks.is_empty() {
        true => Vec::new(),
        false => store.get_many(&pks).await?,
    }
    .into_iter();
    Ok(events
        .iter()
        .zip(&wanted)
        .map(|(e, w)| match w {
            Some(_) => found.next().flatten().unwrap_or_else(|| e.clone()),
            None => e.clone(),
        })
        .collect())
}

/// Each carrier's consequences and whether each happened: one read of the team (when a
/// consequence goes to it), one batch of strongly consistent reads of every item they leave.
pub async fn states(
    store: &Store,
    org: &OrgId,
    carriers: &[Item],
) -> Result<Vec<Vec<State>>, StoreError> {
    let derived: Vec<Vec<Consequence>> = carriers
        .iter()
        .map(|e| derive::consequences(e).unwrap_or_default())
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
    let marked: Vec<Vec<Left>> = derived
        .iter()
        .map(|cs| cs.iter().filter_map(|c| marks(c, cs, &team)).collect())
        .collect();
    let pks: Vec<String> = marked
        .iter()
        .flatten()
        .flat_map(Left::read)
        .cloned()
        .collect();
    let found = match pks.is_empty() {
        true => Vec::new(),
        false => store.get_many(&pks).await?,
    };
    let present: HashMap<&String, &Item> = pks
        .iter()
        .zip(&found)
        .filter_map(|(pk, f)| f.as_ref().map(|f| (pk, f)))
        .collect();
    Ok(marked
        .iter()
        .map(|cs| {
            cs.iter()
                .map(|left| State {
                    kind: left.kind,
                    key: left.key.clone(),
                    done: left.done(&present),
                })
                .collect()
        })
        .collect())
}

/// After the consequences `keys` of the event whose consequences `source` carries happened (or
/// were found done): their keys taken out of the event's waiting mark in one update (held to
/// one of them being in it), and the mark settled when none is left. `true` when this call
/// deleted the mark; nothing when no mark waits.
pub async fn settle(store: &Store, source: &str, keys: &[String]) -> Result<bool, StoreError> {
    if keys.is_empty() {
        return Ok(false);
    }
    let pk = counters::waiting_pk(source);
    let held = keys
        .iter()
        .map(|key| Cond::Contains(counters::PENDING.into(), s(key)))
        .collect();
    let take = Update::new()
        .take_from_set(counters::PENDING, keys.to_vec())
        .when(Cond::Any(held));
    let mark = match store.update_returning(&pk, &take).await? {
        Some(after) => after,
        // None in the set: taken before (a redelivery), or no mark waits. A mark left with an
        // empty set (its last taker cut off) is settled now.
        None => match store.get(&pk).await? {
            Some(mark) => mark,
            None => return Ok(false),
        },
    };
    settle_empty(store, &mark).await
}

/// Settles a mark whose event waits on nothing more (a held SMS decided, whose consequences
/// no message carries): `true` when this call deleted its mark.
pub async fn settle_held(store: &Store, source: &str) -> Result<bool, StoreError> {
    match store.get(&counters::waiting_pk(source)).await? {
        Some(mark) => settle_empty(store, &mark).await,
        None => Ok(false),
    }
}

/// Deletes `mark` while it is there, if its set of pending keys is empty: `true` when this call
/// deleted it (another worker may have, meanwhile). Held to the set being empty still, so keys
/// the fan-out adds meanwhile (a stream's retry) keep it.
async fn settle_empty(store: &Store, mark: &Item) -> Result<bool, StoreError> {
    if mark.contains_key(counters::PENDING) {
        return Ok(false);
    }
    let Some(pk) = mark.opt_str("pk") else {
        return Ok(false);
    };
    store.delete_if_empty(pk, counters::PENDING).await
}
