//! A paused integration's consequences wait. Its deliveries are stored and answered as ever; the
//! fan-out holds each new event of a paused integration (a `HELD#` mark, written only while the
//! pause it read still stands) instead of publishing the event's consequences. Resuming lifts the
//! pause first and then sends what was held, derived again from each stored event (what is
//! missing of what leaves an item, and what no item tells happened: `events::send_held`; their
//! keys absorb a repeat), so nothing held is lost and nothing is sent twice.

use super::answers::{IntegrationResumed, PausedIntegration};
use crate::effects::queue::{Publisher, QueueError};
use crate::ids::{IntegrationId, OrgId};
use crate::integrations::integration_pk;
use crate::store::item::{s, Read};
use crate::store::{Cond, Index, Item, Plan, Seen, Store, StoreError, Transacted, Update, Written};
use crate::time;
use chrono::{DateTime, Utc};

use crate::integrations::pause::{self, HELD, PAUSED_AT, PAUSED_BY};

/// The integration an event item came through, if a webhook's: what a pause holds back.
pub fn integration_of(item: &Item) -> Option<IntegrationId> {
    let org = OrgId::parse(item.opt_str("org")?).ok()?;
    let id = match item.opt_str("kind")? {
        crate::payments::event::KIND | crate::messages::KIND | crate::leads::KIND => {
            item.opt_str("integration_id")?
        }
        // A call's source is its integration, or the browser softphone.
        crate::calls::KIND => item.opt_str("source").filter(|s| *s != "softphone")?,
        _ => return None,
    };
    Some(IntegrationId {
        org,
        id: id.to_owned(),
    })
}

/// The pause an integration's item shows: when, and by whom.
pub fn paused(item: &Item) -> Option<(String, String)> {
    Some((
        pause::paused_since(item)?.to_owned(),
        item.opt_str(PAUSED_BY).unwrap_or_default().to_owned(),
    ))
}

/// What the fan-out does with a new event of an integration.
#[derive(Debug, PartialEq, Eq)]
pub enum Held {
    /// Not paused: publish as ever.
    No,
    /// Paused: held for its resumption, nothing published.
    Yes,
}

/// Holds the event `item` (under `pk`) if its integration is paused: one read of the integration,
/// and for a paused one a transaction that writes the mark only while that pause stands (a
/// resumption meanwhile makes it read again and publish). A held event waits on `tracked` (the
/// keys of its consequences the operator's view tracks): they go on its waiting mark in the same
/// transaction, so the operator counts it while it is held.
pub async fn hold_if_paused(
    store: &Store,
    item: &Item,
    pk: &str,
    tracked: &[String],
    now: DateTime<Utc>,
) -> Result<Held, StoreError> {
    let Some(id) = integration_of(item) else {
        return Ok(Held::No);
    };
    let mut holding = Holding {
        store,
        id,
        event: (item, pk),
        tracked,
        round: 0,
        marked: false,
    };
    Ok(store.write(&mut holding, now).await?.into_value())
}

/// An event held while its integration is paused, as a decision: the integration read, and for
/// a paused one the event's mark put with one more `held`, only while that pause stands (a
/// resumption meanwhile refuses it: read again, and publish).
struct Holding<'a> {
    store: &'a Store,
    id: IntegrationId,
    /// The event's item and its key.
    event: (&'a Item, &'a str),
    tracked: &'a [String],
    round: u32,
    /// Whether the event's mark is there: read after a refused round (the stream's retry of an
    /// event held before), never on the first.
    marked: bool,
}

impl crate::store::Decision for Holding<'_> {
    type Out = Held;
    type Error = StoreError;

    fn keys(&self) -> Vec<String> {
        vec![integration_pk(&self.id)]
    }

    async fn prepare(&mut self, seen: &Seen) -> Result<(), StoreError> {
        self.round += 1;
        let paused = seen.stored().and_then(paused).is_some();
        if paused && self.round > 1 {
            let mark = pause::held_pk(&self.id, self.event.1);
            self.marked = self.store.get(&mark).await?.is_some();
        }
        Ok(())
    }

    fn decide(&self, seen: &Seen, now: DateTime<Utc>) -> Result<Plan<Held>, StoreError> {
        let Some((since, _)) = seen.stored().and_then(paused) else {
            return Ok(Plan::Done(Written::New(Held::No)));
        };
        // Held before (the stream's retry of this record).
        if self.marked {
            return Ok(Plan::Done(Written::Repeat { stored: Held::Yes }));
        }
        let mark = pause::held_mark(&self.id, self.event.1, now, now).build();
        let mut steps = pause::hold_steps(&self.id, &since, mark, now);
        if !self.tracked.is_empty() {
            steps.extend(crate::store::counters::wait_on(self.event.0, self.tracked));
        }
        Ok(Plan::Write {
            steps,
            out: Held::Yes,
        })
    }
}

/// Pauses an integration's consequences, once: `false` when it was paused already.
pub async fn pause(
    store: &Store,
    id: &IntegrationId,
    by: &str,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let at = time::format(now);
    let update = Update::new()
        .set(PAUSED_AT, s(&at))
        .set(PAUSED_BY, s(by))
        // On the organisation's list of paused integrations, for the page: on the second
        // index, so a bank integration stays on the import list (the first).
        .set("gsi2pk", s(pause::paused_list(&id.org)))
        .set("gsi2sk", s(format!("{at}#{}", id.id)))
        .when(Cond::All(vec![Cond::Exists, Cond::Lacks(PAUSED_AT.into())]));
    store.update_if(&integration_pk(id), &update).await
}

/// The organisation's paused integrations, longest paused first: `{"integration_id", "kind",
/// "paused_at", "paused_by", "resuming", "held"}`. An integration is named by its digest (a monobank
/// integration's id is its webhook's credential); `held` is the count its item keeps.
pub async fn paused_of(store: &Store, org: &OrgId) -> Result<Vec<PausedIntegration>, StoreError> {
    let items = paused_items(store, org).await?;
    let mut out = Vec::new();
    for item in &items {
        let digest = crate::ids::integration_digest(item.str_of("id")?);
        let pause = paused(item);
        let text = |name: &str| item.opt_str(name).map(str::to_owned);
        out.push(PausedIntegration {
            integration_id: digest,
            kind: text("integration_kind"),
            provider: text("provider"),
            // Resumed, with events still to send on (a resumption cut short): resume again.
            resuming: pause.is_none(),
            paused_at: pause.as_ref().map(|(at, _)| at.clone()),
            paused_by: pause.map(|(_, by)| by),
            held: held_of(item).max(0),
        });
    }
    Ok(out)
}

/// The items of the organisation's paused integrations (and those still resuming), longest
/// paused first: at most 200, the second index's list.
async fn paused_items(store: &Store, org: &OrgId) -> Result<Vec<Item>, StoreError> {
    let list = pause::paused_list(org);
    let (items, _) = store
        .page_in(Index::States, &list, None, false, 200, None)
        .await?;
    Ok(items)
}

/// The paused integration of `org` whose digest is `digest`, if any.
pub async fn paused_by_digest(
    store: &Store,
    org: &OrgId,
    digest: &str,
) -> Result<Option<IntegrationId>, StoreError> {
    let items = paused_items(store, org).await?;
    Ok(items
        .iter()
        .filter_map(|i| i.opt_str("id"))
        .find(|id| crate::ids::integration_digest(id) == digest)
        .map(|id| IntegrationId {
            org: org.clone(),
            id: id.to_owned(),
        }))
}

/// How a resumption ended.
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Queue(#[from] QueueError),
    #[error(transparent)]
    Derive(#[from] crate::ops::events::ReplayError),
    #[error(transparent)]
    Ledger(#[from] crate::ledger::LedgerError),
    /// Marks the integration counts that the index has not shown within [`INDEX_WAIT`]: a
    /// resumption again sends them.
    #[error("{0} held events are not listed yet; resume again")]
    Unsettled(u64),
    #[error("the integration is gone")]
    Gone,
}

/// The marks an integration's item counts (a count may dip below zero for marks from before
/// it was kept).
fn held_of(item: &Item) -> i64 {
    item.get(HELD)
        .and_then(|v| v.as_n().ok())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// How long a resumption waits for the index to show a mark its item counts (one written a
/// moment before the pause was lifted) before it answers that some remain.
pub const INDEX_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Lifts the pause (if any), then sends every held event on and drops its mark: a held SMS is
/// decided now (the wallet moves now, once), any other event's consequences are sent. Marks
/// are read from the index pass after pass until the integration's own count says none is
/// left, so a mark written a moment before the lift, which the index may not show yet, is sent
/// too. `{"resumed", "events", "sent"}`; run again after a failure, it sends what is still held.
pub async fn resume(
    store: &Store,
    publisher: &Publisher,
    id: &IntegrationId,
    by: &str,
    now: DateTime<Utc>,
) -> Result<IntegrationResumed, ResumeError> {
    // Off the paused list only once nothing is held: a resumption cut short stays listed, so
    // a person can resume it again from the list.
    let lift = Update::new()
        .remove(PAUSED_AT)
        .remove(PAUSED_BY)
        .set("resumed_at", s(time::format(now)))
        .set("resumed_by", s(by))
        // Only a paused one (a stored time sorts before "9999"; a missing one does not).
        .when(Cond::Before(PAUSED_AT.into(), s("9999")));
    let resumed = store.update_if(&integration_pk(id), &lift).await?;
    let started = std::time::Instant::now();
    let (mut sent, mut events) = (0, 0);
    loop {
        let (passed, published) = send_listed(store, publisher, id, now).await?;
        (events, sent) = (events + passed, sent + published);
        let left = match store.get(&integration_pk(id)).await? {
            Some(item) => held_of(&item),
            None => 0,
        };
        if left <= 0 {
            let unlisted = Update::new()
                .set("held_at", s(time::format(now)))
                .remove("gsi2pk")
                .remove("gsi2sk")
                .when(Cond::Lacks(PAUSED_AT.into()));
            store.update_if(&integration_pk(id), &unlisted).await?;
            break;
        }
        if started.elapsed() > INDEX_WAIT {
            return Err(ResumeError::Unsettled(left as u64));
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    tracing::info!(integration = %id.digest(), events, sent, "integration resumed");
    Ok(IntegrationResumed {
        // By its digest, as the paused list names it: a monobank integration's id is a credential.
        integration_id: id.digest(),
        paused: false,
        resumed,
        events,
        sent,
    })
}

/// One pass over the held marks the index lists, oldest first: each still there sent on and
/// dropped. How many events this pass dropped, and how many consequences it published.
async fn send_listed(
    store: &Store,
    publisher: &Publisher,
    id: &IntegrationId,
    now: DateTime<Utc>,
) -> Result<(usize, usize), ResumeError> {
    let (mut events, mut sent, mut cursor) = (0, 0, None::<String>);
    loop {
        let (marks, next) = store
            .page(&pause::held_list(id), false, 100, cursor.as_deref())
            .await?;
        for mark in &marks {
            let pk = mark.str_of("pk")?;
            // The index may still show a mark a pass before this one dropped.
            if store.get(pk).await?.is_none() {
                continue;
            }
            sent += send_on(store, publisher, id, mark, now).await?;
            if store.transact(pause::release_steps(id, pk)).await? == Transacted::Done {
                events += 1;
            }
        }
        match next {
            Some(next) => cursor = Some(next),
            None => return Ok((events, sent)),
        }
    }
}

/// One held event sent on: a held SMS decided (its wallet moved, its waiting mark settled
/// unless a message it placed carries its consequences), any other event's consequences
/// published. How many consequences were published.
async fn send_on(
    store: &Store,
    publisher: &Publisher,
    id: &IntegrationId,
    mark: &Item,
    now: DateTime<Utc>,
) -> Result<usize, ResumeError> {
    let event = mark.str_of("event_pk")?;
    let Some(raw) = mark.opt_str("sms_event") else {
        return Ok(crate::ops::events::send_held(store, publisher, event).await?);
    };
    let sms = crate::ledger::held::from_json(raw)
        .ok_or_else(|| crate::store::item::malformed(mark, "sms_event"))?;
    let integration = crate::integrations::get_sealed(store, id)
        .await?
        .ok_or(ResumeError::Gone)?;
    crate::ledger::release(store, &integration, &sms, now).await?;
    crate::effects::waiting::settle_held(store, event).await?;
    Ok(0)
}
