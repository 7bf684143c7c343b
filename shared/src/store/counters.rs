//! Counters the operator's figures read instead of the lists they count, so a summary or a
//! week's chart is a handful of reads whatever an organisation's volume, and the admin's
//! summary of every organisation as many.
//!
//! Stored events are counted by the fan-out, off the table's stream it reads anyway: one
//! update per counter item a batch touches, each held to its stream shard's checkpoint, so a
//! batch delivered again counts nothing twice (`store::stream_counts`). A figure trails its
//! event by the fan-out's batch (about a second), never more.
//!
//! The rest are kept where the counted thing is written: every transaction that puts a review
//! item on the open list or a run in a state that needs a person adds one to a counter in the
//! same transaction (`with_counts`); a resolution (`resolved`) and a run's move (`run_moved`)
//! take one off in their own. Nothing counted is written without its count, so the counters
//! stay exact. Each counter is kept twice, for the organisation and for the deployment
//! ([`Scope`]), each spread over shards (by the counted item's key; a day's events, by the
//! stream shard that counted them), so concurrent writers seldom meet on one item.
//!
//! What waits is not a counter: an event that waits on consequences a queue carries has a
//! waiting mark, listed on its kind's waiting lists, holding their keys (`wait_on`, the
//! fan-out's, before it sends them; a held SMS event's is put in its own transaction,
//! `waiting_mark`); the mark is deleted when the last of them happened
//! (`effects::waiting::settle`), and the operator's figure counts the marks where they are
//! listed (`ops::events::counts`). A mark is there or not, so the figure cannot drift, and it
//! costs no counter write on either side.
//!
//! Duplicates are not counted here: a duplicate writes nothing (see `ops::chart`).

use super::item::{n, s, Read};
use super::lists::{EventKind, List};
use super::{Item, Step, Store, StoreError, Update};
use crate::ids::OrgId;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Duration, DurationRound, NaiveDate, Utc};
use std::collections::{BTreeMap, HashMap};

/// Items each counter of an organisation is spread over.
pub const SHARDS: u64 = 8;
/// Items each of the deployment's counters is spread over: every organisation writes them.
pub const ALL_SHARDS: u64 = 16;

fn hash(pk: &str) -> u64 {
    // FNV-1a: the same key always lands on the same shard.
    pk.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Whose counters: one organisation's, or the deployment's (every organisation's added up, so
/// the admin's summary reads as many items for a thousand organisations as for one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope<'a> {
    Org(&'a str),
    All,
}

impl Scope<'_> {
    fn prefix(self) -> String {
        match self {
            Self::Org(org) => format!("ORG#{org}"),
            Self::All => "ALL".into(),
        }
    }

    fn shards(self) -> u64 {
        match self {
            Self::Org(_) => SHARDS,
            Self::All => ALL_SHARDS,
        }
    }

    pub(super) fn shard_of(self, pk: &str) -> u64 {
        hash(pk) % self.shards()
    }
}

/// One day's stored events, one shard: `{kind}_{HH}` per kind and hour.
pub(super) fn day_pk(scope: Scope, day: NaiveDate, shard: u64) -> String {
    format!("{}#COUNTS#{day}#{shard}", scope.prefix())
}

/// Open review items, one shard: a number per reason.
fn open_pk(scope: Scope, shard: u64) -> String {
    format!("{}#OPEN#{shard}", scope.prefix())
}

/// What is in a state now, one shard: `runs_{state}` (runs that need a person), `orgs` (the
/// deployment's only). (Items written before waiting marks were counted where they are listed
/// may still hold a `waiting_{kind}`; nothing reads it.)
fn tally_pk(scope: Scope, shard: u64) -> String {
    format!("{}#TALLY#{shard}", scope.prefix())
}

pub(super) fn hour_attr(kind: &str, hour: u32) -> String {
    format!("{kind}_{hour:02}")
}

/// The run states a tally counts: those that need a person.
pub const TALLIED_RUNS: [&str; 2] = ["needs_check", "failed"];

/// The waiting mark of the item whose consequences an event's are (`source`: the event's own
/// item, or an incoming SMS's conversation message): there while any of them has not happened.
pub fn waiting_pk(source: &str) -> String {
    format!("{source}#WAITING")
}

/// The set on a waiting mark of the keys of the consequences still to happen.
pub const PENDING: &str = "pending";

/// On a held event item as it is handed to the store: the item whose consequences it waits on
/// (itself: its decision). It goes onto its waiting mark; the stored event does not carry it.
pub const WAITS: &str = "waits";

/// Where marks put before the waiting index are listed: counted beside the new ones until the
/// last of them is settled (their consequences happen within minutes of a release).
pub const LEGACY_WAITING: super::Index = super::Index::Lists;

/// The waiting marks of a kind (on the index of keys alone, `Index::Keys`), each at
/// `{org}#{time}#{key}`: one organisation's are one range of it, oldest first, and the
/// deployment's are all of it. One index entry a mark, of its keys: its put and its delete
/// write it, its settles (which change its set, not its keys) do not. Marks put before this
/// index are on the first index (`Index::Lists`) under the same list, and counted there too
/// until they settle (`LEGACY_WAITING`).
pub fn waiting_all(kind: EventKind) -> String {
    format!("WAITING#{}", kind.name())
}

/// The range of the waiting list that holds `org`'s marks (`{org}#…`: an organisation id has
/// a fixed length, so no other's is in it).
pub fn waiting_range(org: &OrgId) -> (String, String) {
    (format!("{org}#"), format!("{org}$"))
}

/// When the event of a waiting mark's place on the list was listed (`{org}#{time}#{key}`; a
/// mark put before organisations led the place is at `{time}#{key}`).
pub fn waiting_at(position: &str) -> Option<&str> {
    let (first, rest) = position.split_once('#')?;
    if first.starts_with(|c: char| c.is_ascii_digit()) {
        return Some(first);
    }
    Some(rest.split_once('#')?.0)
}

/// One change to a counter: which counter, attribute, and by how much.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Change {
    Open {
        reason: String,
    },
    Tally {
        attr: String,
    },
    /// The deployment's only (an organisation's tally of itself is pointless).
    Orgs,
}

/// A waiting mark, with no key pending yet: of the consequences `source` carries, counted as
/// the event `event` of `kind` at `position` on its kind's list.
fn marker(source: &str, event: &str, org: &str, kind: EventKind, position: &str) -> Option<Item> {
    let org_id = OrgId::parse(org).ok()?;
    Some(
        super::item::Builder::new(&waiting_pk(source), "waiting", org)
            .str("event_kind", kind.name())
            .str("event", event)
            .str("source", source)
            .keys_list(&waiting_all(kind), &format!("{org_id}#{position}"))
            .build(),
    )
}

/// An event item's organisation, kind and place on its kind's list (`List::Events`).
pub(super) fn listed(item: &Item) -> Option<(OrgId, EventKind, &str)> {
    match List::of(item.opt_str("gsi2pk")?)? {
        List::Events { org, kind } => Some((org, kind, item.opt_str("gsi2sk")?)),
        List::Review { .. } | List::Runs { .. } => None,
    }
}

/// The waiting mark of a held event item (on its kind's list, marked `waits`): there from its
/// put until its decision, with no key pending.
pub fn waiting_mark(item: &Item) -> Option<Item> {
    let (org, kind, position) = listed(item)?;
    marker(
        item.opt_str(WAITS)?,
        item.opt_str("pk")?,
        org.as_str(),
        kind,
        position,
    )
}

/// On an incoming SMS's message (which is on no list of its own): the SMS event it is counted
/// as, and that event's place on the SMS list, so its waiting mark is the SMS event's.
pub const COUNTED_AS: &str = "counted_as";
pub const COUNTED_AT: &str = "counted_at";

/// The update that puts `keys` (of consequences the stored `item` carries) on the waiting mark
/// of the event it is, or is counted as (`COUNTED_AS`), making the mark when there is none:
/// the fan-out's, before it sends what a queue carries, so the event waits from then until the
/// last of them happened. Adding to the set twice adds nothing, so a stream's retry may send it
/// again (and a mark settled meanwhile is made again, to be settled again by the resend).
pub fn wait_on(item: &Item, keys: &[String]) -> Option<Step> {
    let source = item.opt_str("pk")?;
    let mark = match (item.opt_str(COUNTED_AS), item.opt_str(COUNTED_AT)) {
        (Some(event), Some(position)) => marker(
            source,
            event,
            item.opt_str("org")?,
            EventKind::Sms,
            position,
        ),
        _ => {
            let (org, kind, position) = listed(item)?;
            marker(source, source, org.as_str(), kind, position)
        }
    }?;
    let pk = mark.opt_str("pk")?.to_owned();
    let update = mark
        .into_iter()
        .filter(|(name, _)| name != "pk" && name != "sk")
        .fold(Update::new(), |u, (name, value)| u.set(&name, value))
        .add(PENDING, AttributeValue::Ss(keys.to_vec()));
    Some(Step::Update { pk, update })
}

/// What a put adds: its changes (each by the put's key, for the shard), its organisation, and
/// the items that come with it (an event's waiting mark).
fn counted(item: &Item) -> Option<(Vec<Change>, String, Vec<Item>)> {
    let pk = item.opt_str("pk")?;
    if item.opt_str("kind") == Some("org") && pk.ends_with("#ORG") {
        return Some((vec![Change::Orgs], item.opt_str("org")?.to_owned(), vec![]));
    }
    match List::of(item.opt_str("gsi2pk")?)? {
        // An event is counted by the fan-out (`stream_counts`). What waits is the marks
        // themselves, counted where they are listed: a held event is put with its mark (its
        // decision is what it waits on).
        List::Events { org, .. } => {
            let marks: Vec<Item> = waiting_mark(item).into_iter().collect();
            (!marks.is_empty()).then(|| (vec![], org.as_str().to_owned(), marks))
        }
        List::Review { org, state } if state == "open" => {
            let reason = item.opt_str("reason")?.to_owned();
            Some((
                vec![Change::Open { reason }],
                org.as_str().to_owned(),
                vec![],
            ))
        }
        List::Runs { org, state } if TALLIED_RUNS.contains(&state.as_str()) => {
            let attr = format!("runs_{state}");
            Some((
                vec![Change::Tally { attr }],
                org.as_str().to_owned(),
                vec![],
            ))
        }
        // Resolved review items and the other runs' states are listed, not counted.
        List::Review { .. } | List::Runs { .. } => None,
    }
}

/// The counter updates these changes make, in both scopes: one update per counter item (a
/// transaction may touch an item once).
fn updates(changes: &[(String, String, Change, i64)]) -> Vec<Step> {
    let mut by_item: BTreeMap<String, (Option<String>, BTreeMap<String, i64>)> = BTreeMap::new();
    for (key, org, change, delta) in changes {
        let scopes: &[Scope] = match change {
            Change::Orgs => &[Scope::All],
            _ => &[Scope::Org(org), Scope::All],
        };
        for scope in scopes {
            let shard = scope.shard_of(key);
            let (pk, attr) = match change {
                Change::Open { reason } => (open_pk(*scope, shard), reason.clone()),
                Change::Tally { attr } => (tally_pk(*scope, shard), attr.clone()),
                Change::Orgs => (tally_pk(*scope, shard), "orgs".into()),
            };
            let owner = match scope {
                Scope::Org(org) => Some((*org).to_owned()),
                Scope::All => None,
            };
            let entry = by_item
                .entry(pk)
                .or_insert_with(|| (owner, BTreeMap::new()));
            *entry.1.entry(attr).or_default() += delta;
        }
    }
    by_item
        .into_iter()
        .map(|(pk, (org, attrs))| {
            let mut update = Update::new().set("kind", s("counter"));
            if let Some(org) = org {
                update = update.set("org", s(org));
            }
            let update = attrs
                .into_iter()
                .fold(update, |u, (attr, delta)| u.add(&attr, n(delta)));
            Step::Update { pk, update }
        })
        .collect()
}

/// The steps and, after them, the counter updates (and waiting marks) the puts among them
/// imply; `None` when nothing they put is counted.
pub fn with_counts(steps: &[Step]) -> Option<Vec<Step>> {
    let mut changes = Vec::new();
    let mut marks = Vec::new();
    let mut all = Vec::with_capacity(steps.len());
    for step in steps {
        let counted = match step {
            Step::PutNew(item) => counted(item).map(|c| (item, c)),
            _ => None,
        };
        let Some((item, (made, org, with))) = counted else {
            all.push(step.clone());
            continue;
        };
        let key = item.opt_str("pk").unwrap_or_default().to_owned();
        changes.extend(made.into_iter().map(|c| (key.clone(), org.clone(), c, 1)));
        marks.extend(with.into_iter().map(Step::PutNew));
        // What it waits on is its mark's to hold, not the event's.
        let mut item = item.clone();
        item.remove(WAITS);
        all.push(Step::PutNew(item));
    }
    if changes.is_empty() && marks.is_empty() {
        return None;
    }
    all.extend(marks);
    all.extend(updates(&changes));
    Some(all)
}

/// `steps` with every two counter updates of one item folded into one (a resolution's count
/// and a put's, both of the same shard, in one transaction: it may touch an item once).
pub fn merged(steps: Vec<Step>) -> Vec<Step> {
    let mut out: Vec<Step> = Vec::with_capacity(steps.len());
    for step in steps {
        let Step::Update { pk, update } = step else {
            out.push(step);
            continue;
        };
        let same = out.iter_mut().find_map(|s| match s {
            Step::Update { pk: mine, update } if *mine == pk => Some(update),
            _ => None,
        });
        let left = match same {
            Some(mine) => mine.merge_count(update),
            None => Some(update),
        };
        if let Some(update) = left {
            out.push(Step::Update { pk, update });
        }
    }
    out
}

/// The counter steps of a resolution: the review item at `item_pk` (`ORG#o#REVIEW#reason#key`)
/// leaves the open list.
pub fn resolved(org: &OrgId, item_pk: &str) -> Option<Vec<Step>> {
    let reason = item_pk.strip_prefix(&org.pk("REVIEW#"))?.split_once('#')?.0;
    let open = Change::Open {
        reason: reason.to_owned(),
    };
    Some(updates(&[(item_pk.to_owned(), org.to_string(), open, -1)]))
}

/// The counter steps of several resolutions in one transaction: one update per counter item.
pub fn resolved_many(org: &OrgId, item_pks: &[&str]) -> Vec<Step> {
    let changes: Vec<_> = item_pks
        .iter()
        .filter_map(|pk| {
            let reason = pk.strip_prefix(&org.pk("REVIEW#"))?.split_once('#')?.0;
            let open = Change::Open {
                reason: reason.to_owned(),
            };
            Some(((*pk).to_owned(), org.to_string(), open, -1))
        })
        .collect();
    updates(&changes)
}

/// The counter steps of a run's move from one state to another (by state name): none when
/// neither is tallied.
pub fn run_moved(org: &OrgId, run_pk: &str, from: &str, to: &str) -> Vec<Step> {
    let change = |state: &str, delta| {
        TALLIED_RUNS.contains(&state).then(|| {
            let attr = format!("runs_{state}");
            (
                run_pk.to_owned(),
                org.to_string(),
                Change::Tally { attr },
                delta,
            )
        })
    };
    let changes: Vec<_> = [change(from, -1), change(to, 1)]
        .into_iter()
        .flatten()
        .collect();
    match from == to {
        true => Vec::new(),
        false => updates(&changes),
    }
}

/// Counters over some days, of an organisation or of the deployment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counted {
    /// Stored events per (hour, kind).
    pub events: HashMap<(DateTime<Utc>, EventKind), u64>,
    /// Open review items per reason.
    pub open: BTreeMap<String, u64>,
    /// What is in a state now: `runs_{state}`, `orgs`.
    pub tally: BTreeMap<String, u64>,
}

impl Counted {
    /// Events of `kind` stored from `from` (an hour) on.
    pub fn since(&self, kind: EventKind, from: DateTime<Utc>) -> u64 {
        self.events
            .iter()
            .filter(|((hour, k), _)| *k == kind && *hour >= from)
            .map(|(_, n)| n)
            .sum()
    }

    /// Events of `kind` stored in the hour starting at `hour`.
    pub fn at(&self, kind: EventKind, hour: DateTime<Utc>) -> u64 {
        self.events.get(&(hour, kind)).copied().unwrap_or(0)
    }

    /// Runs in `state` (one of [`TALLIED_RUNS`]).
    pub fn runs(&self, state: &str) -> u64 {
        self.tally_of(&format!("runs_{state}"))
    }

    pub fn tally_of(&self, attr: &str) -> u64 {
        self.tally.get(attr).copied().unwrap_or(0)
    }
}

/// The counters of `org` for the `days` up to and including `until`'s, its open review items
/// and its tally: one `BatchGetItem` (`days` × 8 + 16 items) for a week.
pub async fn read(
    store: &Store,
    org: &OrgId,
    until: DateTime<Utc>,
    days: i64,
) -> Result<Counted, StoreError> {
    read_scope(store, Scope::Org(org.as_str()), until, days).await
}

/// The deployment's counters, as [`read`]: two `BatchGetItem`s for a week, whatever the number
/// of organisations.
pub async fn read_all(
    store: &Store,
    until: DateTime<Utc>,
    days: i64,
) -> Result<Counted, StoreError> {
    read_scope(store, Scope::All, until, days).await
}

async fn read_scope(
    store: &Store,
    scope: Scope<'_>,
    until: DateTime<Utc>,
    days: i64,
) -> Result<Counted, StoreError> {
    let last = until.date_naive();
    let dates: Vec<NaiveDate> = (0..days).map(|back| last - Duration::days(back)).collect();
    let shards = 0..scope.shards();
    let mut pks: Vec<String> = dates
        .iter()
        .flat_map(|d| shards.clone().map(move |s| day_pk(scope, *d, s)))
        .collect();
    pks.extend(shards.clone().map(|s| open_pk(scope, s)));
    pks.extend(shards.map(|s| tally_pk(scope, s)));
    // Summed signed, shard by shard, and only then held at zero.
    let mut open: BTreeMap<String, i64> = BTreeMap::new();
    let mut tally: BTreeMap<String, i64> = BTreeMap::new();
    let mut events: HashMap<(DateTime<Utc>, EventKind), i64> = HashMap::new();
    for item in store.get_many(&pks).await?.into_iter().flatten() {
        let pk = item.str_of("pk")?;
        for (attr, value) in &item {
            let Some(number) = value.as_n().ok().and_then(|v| v.parse::<i64>().ok()) else {
                continue;
            };
            if pk.contains("#OPEN#") {
                *open.entry(attr.clone()).or_default() += number;
            } else if pk.contains("#TALLY#") {
                *tally.entry(attr.clone()).or_default() += number;
            } else if let Some(key) = hour_of(pk, attr) {
                *events.entry(key).or_default() += number;
            }
        }
    }
    let held = |n: i64| n.max(0) as u64;
    Ok(Counted {
        events: events.into_iter().map(|(k, v)| (k, held(v))).collect(),
        open: open
            .into_iter()
            .map(|(k, v)| (k, held(v)))
            .filter(|(_, n)| *n > 0)
            .collect(),
        tally: tally.into_iter().map(|(k, v)| (k, held(v))).collect(),
    })
}

/// `payment_17` on the counter of 2026-12-03: (2026-12-03T17:00Z, payment).
fn hour_of(pk: &str, attr: &str) -> Option<(DateTime<Utc>, EventKind)> {
    let day = pk.split("#COUNTS#").nth(1)?.split('#').next()?;
    let day = NaiveDate::parse_from_str(day, "%Y-%m-%d").ok()?;
    let (kind, hour) = attr.rsplit_once('_')?;
    let hour: u32 = hour.parse().ok()?;
    let at = day.and_hms_opt(hour, 0, 0)?.and_utc();
    Some((
        at.duration_trunc(Duration::hours(1)).ok()?,
        EventKind::parse(kind)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::item::Builder;
    use aws_sdk_dynamodb::types::AttributeValue;

    fn shard(pk: &str) -> u64 {
        hash(pk) % SHARDS
    }

    fn event(org: &OrgId, key: &str, at: &str) -> Step {
        let item = Builder::new(
            &org.pk(&format!("PAYMENT#{key}")),
            "payment_event",
            org.as_str(),
        )
        .index(&org.pk("EVENTS#payment"), &format!("{at}#{key}"))
        .build();
        Step::PutNew(item)
    }

    #[test]
    fn an_event_put_carries_no_counter_the_fan_out_counts_it() {
        let org = OrgId::generate();
        let steps = vec![event(&org, "p1", "2026-12-03T17:59:59Z")];
        assert!(with_counts(&steps).is_none(), "{steps:?}");
    }

    fn open_item(org: &OrgId, key: &str) -> Step {
        let pk = org.pk(&format!("REVIEW#unknown_invoice#{key}"));
        let item = Builder::new(&pk, "review", org.as_str())
            .str("reason", "unknown_invoice")
            .index(
                &super::super::lists::review_pk(org, "open"),
                &format!("2026-12-03T17:00:00Z#{key}"),
            )
            .build();
        Step::PutNew(item)
    }

    #[test]
    fn two_counted_puts_on_one_counter_item_make_one_update() {
        let org = OrgId::generate();
        // Keys that land on the same shard.
        let (a, b) = (0..100)
            .map(|i| format!("k{i}"))
            .map(|k| {
                let pk = org.pk(&format!("REVIEW#unknown_invoice#{k}"));
                (shard(&pk), k)
            })
            .fold(HashMap::<u64, Vec<String>>::new(), |mut m, (s, k)| {
                m.entry(s).or_default().push(k);
                m
            })
            .into_values()
            .find(|ks| ks.len() >= 2)
            .map(|ks| (ks[0].clone(), ks[1].clone()))
            .unwrap();
        let all = with_counts(&[open_item(&org, &a), open_item(&org, &b)]).unwrap();
        let org_counters: Vec<&Step> = all
            .iter()
            .filter(|s| s.pk().is_some_and(|pk| pk.starts_with(&org.pk("OPEN#"))))
            .collect();
        assert_eq!(org_counters.len(), 1, "{all:?}");
        let Step::Update { update, .. } = org_counters[0] else {
            panic!("{all:?}")
        };
        assert_eq!(
            update,
            &Update::new()
                .set("kind", s("counter"))
                .set("org", s(org.as_str()))
                .add("unknown_invoice", n(2))
        );
    }

    #[test]
    fn two_counts_of_one_item_in_a_transaction_are_one_update() {
        let count = |attr: &str, delta: i64| Step::Update {
            pk: "ORG#o#OPEN#3".into(),
            update: Update::new().set("kind", s("counter")).add(attr, n(delta)),
        };
        let put = Step::PutNew(Builder::new("ORG#o#REVIEW#x", "review", "o").build());
        let steps = merged(vec![
            count("payment_proposed", -1),
            put,
            count("overpayment", 1),
            count("payment_proposed", 1),
        ]);
        assert_eq!(steps.len(), 2, "{steps:?}");
        let Step::Update { update, .. } = &steps[0] else {
            panic!("the counter first: {steps:?}");
        };
        let shown = format!("{update:?}");
        assert!(
            shown.contains("N(\"0\")") && shown.contains("overpayment"),
            "{shown}"
        );
        // An update held to a condition is no count: it is left as it is.
        let held = Step::Update {
            pk: "ORG#o#OPEN#3".into(),
            update: Update::new()
                .add("a", n(1))
                .when(crate::store::Cond::Exists),
        };
        assert_eq!(merged(vec![count("a", 1), held]).len(), 2);
    }

    #[test]
    fn nothing_uncounted_gets_a_counter() {
        let org = OrgId::generate();
        let item = Builder::new(&org.pk("MEMBER#u1"), "member", org.as_str()).build();
        assert!(with_counts(&[Step::PutNew(item)]).is_none());
    }

    #[test]
    fn a_resolution_takes_one_off_its_reasons_shard() {
        let org = OrgId::generate();
        let pk = org.pk("REVIEW#unmatched_bank_row#tx1");
        let steps = resolved(&org, &pk).unwrap();
        let Some(Step::Update {
            pk: counter,
            update,
        }) = steps
            .into_iter()
            .find(|s| s.pk().is_some_and(|p| p.starts_with("ORG#")))
        else {
            panic!()
        };
        assert_eq!(counter, open_pk(Scope::Org(org.as_str()), shard(&pk)));
        assert_eq!(
            update,
            Update::new()
                .set("kind", s("counter"))
                .set("org", s(org.as_str()))
                .add("unmatched_bank_row", n(-1))
        );
    }

    #[test]
    fn a_held_event_is_put_with_its_mark_on_one_list_and_no_tally() {
        let org = OrgId::generate();
        let Step::PutNew(mut item) = event(&org, "p1", "2026-12-03T17:00:00Z") else {
            panic!()
        };
        let pk = item.opt_str("pk").unwrap().to_owned();
        item.insert("waits".into(), s(&pk));
        let all = with_counts(&[Step::PutNew(item)]).unwrap();
        let mark = all
            .iter()
            .find_map(|step| match step {
                Step::PutNew(i) if i.opt_str("kind") == Some("waiting") => Some(i.clone()),
                _ => None,
            })
            .expect("a waiting mark");
        assert_eq!(mark.opt_str("pk"), Some(waiting_pk(&pk).as_str()));
        assert_eq!(mark.opt_str("gsi2pk"), None, "one index entry");
        assert_eq!(mark.opt_str("gsi1pk"), None, "one index entry");
        assert_eq!(mark.opt_str("gsi3pk"), Some("WAITING#payment"));
        let position = mark.opt_str("gsi3sk").unwrap();
        let (low, high) = waiting_range(&org);
        assert!(low.as_str() <= position && position < high.as_str());
        assert_eq!(waiting_at(position), Some("2026-12-03T17:00:00Z"));
        assert_eq!(
            waiting_at("2026-12-03T17:00:00Z#payment:stripe:pi_1"),
            Some("2026-12-03T17:00:00Z"),
            "a mark put before the organisation led its place"
        );
        assert_eq!(mark.get(PENDING), None, "it waits on its decision");
        let Some(Step::PutNew(stored)) = all.first() else {
            panic!("the event first")
        };
        assert_eq!(stored.opt_str("pk"), Some(pk.as_str()));
        assert!(
            stored.get(WAITS).is_none(),
            "what it waits on is the mark's: {stored:?}"
        );
        let tallies: Vec<&str> = all
            .iter()
            .filter_map(Step::pk)
            .filter(|pk| pk.contains("#TALLY#"))
            .collect();
        assert!(tallies.is_empty(), "{tallies:?}");
    }

    #[test]
    fn what_the_fan_out_sends_goes_on_the_mark_of_the_event_it_is_or_is_counted_as() {
        let org = OrgId::generate();
        let Step::PutNew(event) = event(&org, "p1", "2026-12-03T17:00:00Z") else {
            panic!()
        };
        let pk = event.opt_str("pk").unwrap().to_owned();
        let keys = vec!["trigger:invoice.paid:k".to_owned()];
        let Some(Step::Update { pk: mark, update }) = wait_on(&event, &keys) else {
            panic!("an update of the mark")
        };
        assert_eq!(mark, waiting_pk(&pk));
        let expression = update.expression();
        assert!(expression.condition.is_none(), "made when there is none");
        let values: Vec<&AttributeValue> = expression.values.values().collect();
        assert!(values.contains(&&AttributeValue::Ss(keys.clone())));
        assert!(values.contains(&&s("WAITING#payment")));
        assert!(values.contains(&&s(&pk)), "the event and the source");
        // An incoming SMS's message: the mark is its SMS event's, at that event's place.
        let mut message = Item::new();
        message.insert("pk".into(), s(org.pk("MESSAGE#m1")));
        message.insert("org".into(), s(org.as_str()));
        message.insert(COUNTED_AS.into(), s(org.pk("SMS#e1")));
        message.insert(COUNTED_AT.into(), s("2026-12-03T17:00:00Z#sms:e1"));
        let Some(Step::Update { pk: mark, update }) = wait_on(&message, &keys) else {
            panic!("an update of the mark")
        };
        assert_eq!(mark, waiting_pk(&org.pk("MESSAGE#m1")));
        let values = update.expression().values;
        let values: Vec<&AttributeValue> = values.values().collect();
        assert!(values.contains(&&s("WAITING#sms")));
        assert!(
            values.contains(&&s(org.pk("SMS#e1"))),
            "counted as the SMS event"
        );
        assert!(values.contains(&&s(format!("{org}#2026-12-03T17:00:00Z#sms:e1"))));
        // An item on no list, counted as nothing: no mark.
        message.remove(COUNTED_AS);
        assert!(wait_on(&message, &keys).is_none());
    }

    #[test]
    fn a_runs_move_counts_only_the_states_that_need_a_person() {
        let org = OrgId::generate();
        let pk = org.pk("RUN#r1:k");
        assert!(run_moved(&org, &pk, "sending", "sent").is_empty());
        assert!(run_moved(&org, &pk, "needs_check", "needs_check").is_empty());
        let into = run_moved(&org, &pk, "sending", "needs_check");
        assert_eq!(
            into.len(),
            2,
            "the organisation's tally and the deployment's"
        );
        let Step::Update { update, .. } = &into[0] else {
            panic!()
        };
        assert_eq!(
            update,
            &Update::new()
                .set("kind", s("counter"))
                .add("runs_needs_check", n(1))
        );
        let across = run_moved(&org, &pk, "needs_check", "failed");
        let Some(Step::Update { update, .. }) = across.last() else {
            panic!()
        };
        assert_eq!(
            update,
            &Update::new()
                .set("kind", s("counter"))
                .set("org", s(org.as_str()))
                .add("runs_failed", n(1))
                .add("runs_needs_check", n(-1))
        );
    }

    #[test]
    fn an_hours_attribute_reads_back() {
        let pk = "ORG#o1#COUNTS#2026-12-03#4";
        let at = "2026-12-03T17:00:00Z".parse().unwrap();
        assert_eq!(hour_of(pk, "bank_row_17"), Some((at, EventKind::BankRow)));
        assert_eq!(hour_of(pk, "kind"), None);
    }
}
