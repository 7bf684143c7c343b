//! Stored events as the operator sees them: how many of a kind came today and this week and how
//! many wait for their consequences (all from the counters, `store::counters`), the oldest that
//! waits (one read of the kind's waiting marks), a list with each event's summary and
//! consequences, filtered by time and text, and the replays that send what is missing.

use super::answers::{ConsequenceState, EventRow};
pub use super::answers::{Counts, PerEvent};
use super::{events_pk, ids, EventKind};
use crate::effects::queue::{Publisher, QueueError};
use crate::effects::waiting::{self, State};
use crate::effects::{derive, Consequence};
use crate::ids::OrgId;
use crate::money;
use crate::store::counters::{self, Counted};
use crate::store::item::{s, Read};
use crate::store::{Cond, Index, Item, Store, StoreError, Update};
use chrono::{DateTime, Duration, Utc};
use std::time::Instant;

/// One kind's figures, of an organisation or (`None`) of the deployment: today's and the
/// week's from the counters (read once for every kind), what waits from its waiting marks (one
/// count of the list and one query of its first item, the oldest), and what an event of the
/// kind cost today from `spent` (the day's figures, read once for every kind).
pub async fn counts(
    store: &Store,
    org: Option<&OrgId>,
    (kind, spent): (EventKind, &crate::store::spent::Day),
    counted: &Counted,
    now: DateTime<Utc>,
) -> Result<Counts, StoreError> {
    let midnight = now
        .date_naive()
        .and_hms_opt(0, 0, 0)
        .expect("midnight")
        .and_utc();
    // What waits is the marks listed (on the waiting index, and the marks of before it on the
    // first): an organisation's counted in its range of the list (one query, however many
    // events came) and the first of them the oldest; the deployment's, all of the list.
    let list = counters::waiting_all(kind);
    let ((waiting, oldest), (legacy, legacy_oldest)) = futures::try_join!(
        marks(store, Index::Keys, &list, org),
        marks(store, counters::LEGACY_WAITING, &list, org),
    )?;
    let oldest_waiting_at = [oldest, legacy_oldest].into_iter().flatten().min();
    let waiting = waiting + legacy;
    let today = counted.since(kind, midnight);
    Ok(Counts {
        today,
        week: counted.since(kind, midnight - Duration::days(6)),
        waiting,
        oldest_waiting_at,
        units: PerEvent::of(spent, today),
    })
}

/// The waiting marks of a list on `index`: how many, and when the oldest one's event was
/// listed. An organisation's: a count of its range and its first mark; the deployment's: every
/// mark, read once (the list is in organisation order).
async fn marks(
    store: &Store,
    index: Index,
    list: &str,
    org: Option<&OrgId>,
) -> Result<(u64, Option<String>), StoreError> {
    let at = |mark: &Item| {
        mark.opt_str(index.sk())
            .and_then(counters::waiting_at)
            .map(str::to_owned)
    };
    if let Some(org) = org {
        let (low, high) = counters::waiting_range(org);
        let range = Some((low.as_str(), high.as_str()));
        let ((first, _), waiting) = futures::try_join!(
            store.page_in(index, list, range, false, 1, None),
            store.count_in(index, list, range),
        )?;
        return Ok((waiting, first.first().and_then(at)));
    }
    let (mut count, mut oldest, mut cursor) = (0, None::<String>, None::<String>);
    loop {
        let (page, next) = store
            .page_in(index, list, None, false, 1000, cursor.as_deref())
            .await?;
        count += page.len() as u64;
        oldest = page.iter().filter_map(at).chain(oldest).min();
        match next {
            Some(next) => cursor = Some(next),
            None => return Ok((count, oldest)),
        }
    }
}

/// What a person recognises an event by, from its stored item.
pub fn summary(kind: EventKind, item: &Item) -> String {
    let text = |name: &str| item.opt_str(name).unwrap_or_default();
    // Every amount of an item is in the item's currency.
    let currency = money::Currency::parse(text("currency")).ok();
    let amount = |name: &str| {
        item.opt_dec(name)
            .map(|a| money::shown(a, currency))
            .unwrap_or_default()
    };
    match kind {
        EventKind::Payment => {
            let paid = item.opt_dec("applied").unwrap_or_default()
                + item.opt_dec("unapplied").unwrap_or_default();
            let invoice = item
                .opt_str("invoice_number")
                .filter(|n| !n.is_empty())
                .unwrap_or("no invoice");
            format!(
                "{invoice} · {} {}",
                money::shown(paid, currency),
                text("currency")
            )
        }
        EventKind::Message => {
            let body = text("text");
            let mut shown: String = body.chars().take(80).collect();
            if body.chars().count() > 80 {
                shown.push('…');
            }
            format!("{}: {shown}", text("sender_name"))
        }
        EventKind::Call => {
            let answered = match item.bool_of("missed") {
                true => "missed",
                false => "answered",
            };
            format!("{} · {} · {answered}", text("peer"), text("direction"))
        }
        EventKind::BankRow => {
            let counterparty = item.opt_str("counterparty").unwrap_or("no counterparty");
            format!("{} {} · {counterparty}", amount("amount"), text("currency"))
        }
        EventKind::Sms => {
            let price = item.opt_str("price").unwrap_or("unpriced");
            format!("{} · {price}", text("message_id"))
        }
        EventKind::Lead => {
            let via = item.opt_str("source").unwrap_or("a form");
            format!("{} · {via}", text("name"))
        }
        EventKind::CreditNote => {
            format!(
                "{} · {} {}",
                text("number"),
                amount("amount"),
                text("currency")
            )
        }
    }
}

/// The longest `q` a list takes.
pub const QUERY_MAX: usize = 200;
/// The most events one filtered page reads looking for matches of `q`; the page may end with
/// fewer items than asked and a cursor to go on.
pub const SCAN_MAX: usize = 1000;
/// The longest window a bulk replay takes.
pub const WINDOW_MAX: Duration = Duration::days(7);

/// A list's filters: events listed at `from` (inclusive) to `to` (exclusive), and `q`, a
/// case-insensitive piece of the key or the summary.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
    pub q: Option<String>,
}

/// Why filters were refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    #[error("from and to are RFC 3339 times, from before to")]
    Window,
    #[error("q is 1 to 200 characters")]
    Query,
}

impl Filter {
    /// Reads the filters as they came (each absent, or its raw text).
    pub fn parse(
        from: Option<&str>,
        to: Option<&str>,
        q: Option<&str>,
    ) -> Result<Self, FilterError> {
        let time = |raw: Option<&str>| match raw {
            None => Ok(None),
            Some(raw) => crate::time::parse(raw).map(Some).ok_or(FilterError::Window),
        };
        let (from, to) = (time(from)?, time(to)?);
        if let (Some(from), Some(to)) = (from, to) {
            if from >= to {
                return Err(FilterError::Window);
            }
        }
        let q = match q {
            None => None,
            Some(q) if (1..=QUERY_MAX).contains(&q.chars().count()) => Some(q.to_lowercase()),
            Some(_) => return Err(FilterError::Query),
        };
        Ok(Self { from, to, q })
    }

    /// The positions the window spans: a stored time sorts before its `#key`, so `from`'s
    /// own events are in and `to`'s are out.
    fn range(&self) -> Option<(String, String)> {
        if self.from.is_none() && self.to.is_none() {
            return None;
        }
        // Every stored time sorts after "0": a window without `from` is open below.
        let low = self
            .from
            .map(crate::time::format)
            .unwrap_or_else(|| "0".into());
        let high = self
            .to
            .map(crate::time::format)
            .unwrap_or_else(|| "9999".into());
        Some((low, high))
    }

    fn matches(&self, kind: EventKind, item: &Item) -> bool {
        let Some(q) = &self.q else { return true };
        let key = item
            .opt_str("gsi2sk")
            .and_then(|p| p.split_once('#'))
            .map(|(_, key)| key)
            .unwrap_or_default();
        key.to_lowercase().contains(q) || summary(kind, item).to_lowercase().contains(q)
    }
}

/// An event as the list shows it.
fn view(kind: EventKind, item: &Item, states: &[State]) -> EventRow {
    let position = item.opt_str("gsi2sk").unwrap_or_default();
    let (at, key) = position.split_once('#').unwrap_or((position, ""));
    EventRow {
        id: ids::encode(item.opt_str("pk").unwrap_or_default()),
        org: item.opt_str("org").map(str::to_owned),
        key: key.to_owned(),
        kind: kind.name(),
        at: at.to_owned(),
        summary: summary(kind, item),
        outcome: item.opt_str("outcome").unwrap_or("stored").to_owned(),
        consequences: states.iter().map(consequence).collect(),
    }
}

/// A consequence as the list shows it.
fn consequence(state: &State) -> ConsequenceState {
    ConsequenceState {
        kind: state.kind,
        key: state.key.clone(),
        state: if state.done { "done" } else { "missing" },
    }
}

/// A page of an organisation's events of a kind, newest first, each with its consequences:
/// within the filter's window, and (with `q`) only those that match, read [`SCAN_MAX`] at most.
pub async fn page(
    store: &Store,
    org: &OrgId,
    kind: EventKind,
    filter: &Filter,
    limit: i32,
    cursor: Option<&str>,
) -> Result<(Vec<EventRow>, Option<String>), StoreError> {
    let list = events_pk(org, kind);
    let (items, next) = match filter.q {
        None => {
            let range = filter.range();
            let range = range.as_ref().map(|(a, b)| (a.as_str(), b.as_str()));
            store
                .page_in(Index::States, &list, range, true, limit, cursor)
                .await?
        }
        Some(_) => matching(store, (&list, kind), filter, limit as usize, cursor).await?,
    };
    let carriers = waiting::carriers(store, &items).await?;
    let states = waiting::states(store, org, &carriers).await?;
    let listed = items
        .iter()
        .zip(&states)
        .map(|(item, s)| view(kind, item, s))
        .collect();
    Ok((listed, next))
}

/// The events of `list` that match the filter's `q`, up to `limit`, reading at most
/// [`SCAN_MAX`]: a page cut short goes on after its last item shown, and one that showed the
/// list's last item has no cursor.
async fn matching(
    store: &Store,
    (list, kind): (&str, EventKind),
    filter: &Filter,
    limit: usize,
    cursor: Option<&str>,
) -> Result<(Vec<Item>, Option<String>), StoreError> {
    let range = filter.range();
    let range = range.as_ref().map(|(a, b)| (a.as_str(), b.as_str()));
    let (mut items, mut next, mut read) = (Vec::new(), cursor.map(str::to_owned), 0);
    loop {
        let (page, after) = store
            .page_in(Index::States, list, range, true, 200, next.as_deref())
            .await?;
        read += page.len();
        next = after;
        let room = limit - items.len();
        items.extend(
            page.into_iter()
                .filter(|i| filter.matches(kind, i))
                .take(room),
        );
        if items.len() == limit {
            next = items.last().map(|i| Store::cursor_after(Index::States, i));
            break;
        }
        if next.is_none() || read >= SCAN_MAX {
            return Ok((items, next));
        }
    }
    // Nothing after the last item shown: no cursor.
    let rest = match &next {
        Some(after) => {
            store
                .page_in(Index::States, list, range, true, 1, Some(after))
                .await?
                .0
        }
        None => Vec::new(),
    };
    Ok((items, next.filter(|_| !rest.is_empty())))
}

/// Where each event kind's items are kept: the ids a replay takes.
pub const EVENT_ITEMS: [&str; 7] = [
    "PAYMENT#",
    "MESSAGE#",
    "CALL#",
    "BANKTX#",
    "SMS_EVENT#",
    "LEAD#",
    "CREDIT_NOTE#",
];

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

/// Sends the stored event's missing consequences again: those the list shows `missing`, no
/// other. Returns how many were sent now. What it sends the event waits on, from before it is
/// sent (its keys on the event's waiting mark, as the fan-out puts them); the mark is settled
/// of what happened (a settle lost; a held event's records written before its hold; a mark an
/// earlier release put for records the fan-out now writes at once).
pub async fn replay(store: &Store, publisher: &Publisher, pk: &str) -> Result<usize, ReplayError> {
    send_missing(store, publisher, pk, false).await
}

/// A held event's consequences sent on at its resumption: the missing ones, as a replay sends
/// them, and those no item tells happened (a payment's lookalike check, a reversal's kept money
/// taken back), which its hold kept from ever being made.
pub async fn send_held(
    store: &Store,
    publisher: &Publisher,
    pk: &str,
) -> Result<usize, ReplayError> {
    send_missing(store, publisher, pk, true).await
}

async fn send_missing(
    store: &Store,
    publisher: &Publisher,
    pk: &str,
    held: bool,
) -> Result<usize, ReplayError> {
    let item = store.get(pk).await?.ok_or(ReplayError::NotFound)?;
    let org = OrgId::parse(item.str_of("org")?).map_err(|_| ReplayError::NotFound)?;
    let [missing] = <[_; 1]>::try_from(missing_of(store, &org, vec![item]).await?)
        .map_err(|_| ReplayError::NotFound)?;
    let waits = crate::consequences::tracked_keys(&missing.consequences);
    if let Some(mark) = (!waits.is_empty())
        .then(|| crate::store::counters::wait_on(&missing.carrier, &waits))
        .flatten()
    {
        store.commit(vec![mark]).await?;
    }
    waiting::settle(store, &missing.source, &missing.done).await?;
    conversation_moved(store, &missing.carrier).await?;
    let mut sending = missing.consequences;
    if held {
        sending.extend(missing.untracked);
    }
    if sending.is_empty() {
        return Ok(0);
    }
    Ok(publisher
        .publish_from(Some(&missing.source), &sending)
        .await?
        .sent)
}

/// What the fan-out does as it reads a message, done again with its replay (a batch the stream
/// gave up on): its conversation moved forward to it, only over an earlier time.
async fn conversation_moved(store: &Store, carrier: &Item) -> Result<(), StoreError> {
    if let Some((conversation, update)) = crate::messages::conversation::moved_by(carrier) {
        store.update_if(&conversation, &update).await?;
    }
    Ok(())
}

/// An event, the item its consequences are stored from, those of them the list shows
/// `missing`, the keys of its tracked ones that happened, and those no item tells happened.
struct Missing {
    event: Item,
    carrier: Item,
    source: String,
    consequences: Vec<Consequence>,
    done: Vec<String>,
    untracked: Vec<Consequence>,
}

/// A bulk replay's window: one kind's events listed at `from` to `to` (exclusive).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub kind: EventKind,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
}

impl Window {
    fn range(&self) -> (String, String) {
        (crate::time::format(self.from), crate::time::format(self.to))
    }
}

/// What a dry run found: the window's events, and the consequences of them not done; with a
/// cursor when its time ran out before the window's end (the figures are then those of the
/// part counted, and the next call counts on from the cursor).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Found {
    pub events: u64,
    pub missing: u64,
    pub cursor: Option<String>,
}

/// How long one bulk replay call works before it answers `more` with a cursor.
pub const REPLAY_CALL: std::time::Duration = std::time::Duration::from_secs(15);
/// How long one dry run counts before it answers `more` with a cursor.
pub const DRY_RUN_CALL: std::time::Duration = std::time::Duration::from_secs(20);
/// How long a consequence a bulk replay sent is left to its worker before another bulk replay
/// may send it again: a worker applies it within seconds, or it ends in the DLQ with its
/// review item well inside this.
pub const REPLAY_HOLD: Duration = Duration::minutes(15);

/// Each event with the item its consequences are stored from (`waiting::carriers`) and those
/// of its consequences that are `missing` (`waiting::states`): what the list shows, what a dry
/// run counts and what a replay sends are one set.
async fn missing_of(
    store: &Store,
    org: &OrgId,
    events: Vec<Item>,
) -> Result<Vec<Missing>, StoreError> {
    let carriers = waiting::carriers(store, &events).await?;
    let states = waiting::states(store, org, &carriers).await?;
    let mut out = Vec::with_capacity(events.len());
    for ((event, carrier), states) in events.into_iter().zip(&carriers).zip(states) {
        let missing: Vec<String> = states
            .into_iter()
            .filter(|s| !s.done)
            .map(|s| s.key)
            .collect();
        let (consequences, happened): (Vec<Consequence>, Vec<Consequence>) =
            derive::consequences(carrier)?
                .into_iter()
                .partition(|c| missing.contains(&shown_key(c)));
        let (done, untracked): (Vec<Consequence>, Vec<Consequence>) =
            happened.into_iter().partition(Consequence::is_tracked);
        out.push(Missing {
            event,
            carrier: carrier.clone(),
            source: carrier.str_of("pk")?.to_owned(),
            consequences,
            done: done.iter().map(Consequence::key).collect(),
            untracked,
        });
    }
    Ok(out)
}

/// The window's events, oldest first, a page at a time, each with its missing consequences.
async fn missing_page(
    store: &Store,
    org: &OrgId,
    window: &Window,
    cursor: Option<&str>,
) -> Result<(Vec<Missing>, Option<String>), StoreError> {
    let (low, high) = window.range();
    let (events, next) = store
        .page_in(
            Index::States,
            &events_pk(org, window.kind),
            Some((&low, &high)),
            false,
            50,
            cursor,
        )
        .await?;
    Ok((missing_of(store, org, events).await?, next))
}

/// A consequence's key as its state shows it.
fn shown_key(c: &Consequence) -> String {
    match c {
        Consequence::Notification(n) => n.key.to_string(),
        other => other.key(),
    }
}

/// A dry run of a bulk replay: the window's events and their consequences the list shows
/// `missing`, counted for [`DRY_RUN_CALL`] at most; nothing is sent.
pub async fn dry_run(
    store: &Store,
    org: &OrgId,
    window: &Window,
    cursor: Option<&str>,
) -> Result<Found, StoreError> {
    dry_run_within(store, org, (window, cursor), DRY_RUN_CALL).await
}

/// [`dry_run`] for `budget` at most: a page at a time, answering with the cursor of the next
/// once the budget is spent.
pub async fn dry_run_within(
    store: &Store,
    org: &OrgId,
    (window, cursor): (&Window, Option<&str>),
    budget: std::time::Duration,
) -> Result<Found, StoreError> {
    let started = Instant::now();
    let mut found = Found {
        cursor: cursor.map(str::to_owned),
        ..Found::default()
    };
    loop {
        let (page, next) = missing_page(store, org, window, found.cursor.as_deref()).await?;
        found.events += page.len() as u64;
        found.missing += page
            .iter()
            .map(|m| m.consequences.len() as u64)
            .sum::<u64>();
        found.cursor = next;
        if found.cursor.is_none() || started.elapsed() >= budget {
            return Ok(found);
        }
    }
}

/// What one bulk replay call did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Replayed {
    /// Events whose missing consequences this call sent.
    pub events: u64,
    pub sent: u64,
    /// Where the next call goes on (`None`: the window is done).
    pub cursor: Option<String>,
}

/// Sends the missing consequences of the window's events, each once: an event with any is
/// taken for [`REPLAY_HOLD`] by a conditional write on its item before its consequences are
/// sent, so a second replay meanwhile (or this one's repeat) sends nothing for it. Stops after
/// [`REPLAY_CALL`] with a cursor.
pub async fn replay_window(
    store: &Store,
    publisher: &Publisher,
    (org, window): (&OrgId, &Window),
    cursor: Option<&str>,
    now: DateTime<Utc>,
) -> Result<Replayed, ReplayError> {
    let started = Instant::now();
    let mut done = Replayed::default();
    let mut cursor = cursor.map(str::to_owned);
    loop {
        let (page, next) = missing_page(store, org, window, cursor.as_deref()).await?;
        for Missing {
            event,
            carrier,
            source,
            consequences,
            done: happened,
            ..
        } in page
        {
            if consequences.is_empty() {
                continue;
            }
            let take = Update::new()
                .set("replayed_at", s(crate::time::format(now)))
                .when(Cond::AbsentOrBefore(
                    "replayed_at".into(),
                    s(crate::time::format(now - REPLAY_HOLD)),
                ));
            if !store.update_if(event.str_of("pk")?, &take).await? {
                continue;
            }
            conversation_moved(store, &carrier).await?;
            let published = publisher.publish_from(Some(&source), &consequences).await?;
            waiting::settle(store, &source, &happened).await?;
            done.events += 1;
            done.sent += published.sent as u64;
        }
        cursor = next;
        if cursor.is_none() || started.elapsed() >= REPLAY_CALL {
            done.cursor = cursor;
            return Ok(done);
        }
    }
}
