//! Counters the operator's figures read instead of the lists they count, so a summary or a
//! week's chart is a handful of reads whatever an organisation's volume.
//!
//! They are kept where the counted thing is written: every transaction that puts an event on
//! its kind's list (`lists::events_pk`) or a review item on the open list adds one to a counter
//! in the same transaction (`with_counts`), and a resolution takes one off in its own
//! transaction (`resolved`). Nothing counted is written without its count, so the counters stay
//! exact. Each counter is spread over [`SHARDS`] items by the counted item's key, so concurrent
//! events of one organisation seldom meet on one item.
//!
//! Duplicates are not counted here: a duplicate writes nothing (see `ops::chart`).

use super::item::{n, s, Read};
use super::lists::EventKind;
use super::{Item, Step, Store, StoreError, Update};
use crate::ids::OrgId;
use chrono::{DateTime, Duration, DurationRound, NaiveDate, Timelike, Utc};
use std::collections::{BTreeMap, HashMap};

/// Items each counter is spread over.
pub const SHARDS: u64 = 8;

fn shard(pk: &str) -> u64 {
    // FNV-1a: the same key always lands on the same shard.
    let hash = pk.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    hash % SHARDS
}

/// One day's stored events of an organisation, one shard: `{kind}_{HH}` per kind and hour.
fn day_pk(org: &str, day: NaiveDate, shard: u64) -> String {
    format!("ORG#{org}#COUNTS#{day}#{shard}")
}

/// An organisation's open review items, one shard: a number per reason.
fn open_pk(org: &str, shard: u64) -> String {
    format!("ORG#{org}#OPEN#{shard}")
}

fn hour_attr(kind: &str, hour: u32) -> String {
    format!("{kind}_{hour:02}")
}

/// What a put adds to the counters: its counter item, attribute and organisation.
fn counted(item: &Item) -> Option<(String, String, String)> {
    let list = item.opt_str("gsi2pk")?;
    let pk = item.opt_str("pk")?;
    let rest = list.strip_prefix("ORG#")?;
    let (org, list) = rest.split_once('#')?;
    if let Some(kind) = list.strip_prefix("EVENTS#") {
        let at = item.opt_str("gsi2sk")?.split_once('#')?.0;
        let at = crate::time::parse(at)?;
        let counter = day_pk(org, at.date_naive(), shard(pk));
        return Some((counter, hour_attr(kind, at.hour()), org.to_owned()));
    }
    if list == "REVIEW#open" {
        let reason = item.opt_str("reason")?;
        return Some((open_pk(org, shard(pk)), reason.to_owned(), org.to_owned()));
    }
    None
}

/// Adds to `counts` what these changes make: one update per counter item (a transaction may
/// touch an item once).
fn updates(changes: impl IntoIterator<Item = (String, String, String, i64)>) -> Vec<Step> {
    let mut by_item: BTreeMap<String, (String, BTreeMap<String, i64>)> = BTreeMap::new();
    for (pk, attr, org, delta) in changes {
        let entry = by_item.entry(pk).or_insert_with(|| (org, BTreeMap::new()));
        *entry.1.entry(attr).or_default() += delta;
    }
    by_item
        .into_iter()
        .map(|(pk, (org, attrs))| {
            let update = attrs.into_iter().fold(
                Update::new().set("kind", s("counter")).set("org", s(org)),
                |u, (attr, delta)| u.add(&attr, n(delta)),
            );
            Step::Update { pk, update }
        })
        .collect()
}

/// The steps and, after them, the counter updates the puts among them imply; `None` when
/// nothing they put is counted.
pub fn with_counts(steps: &[Step]) -> Option<Vec<Step>> {
    let changes: Vec<_> = steps
        .iter()
        .filter_map(|step| match step {
            Step::PutNew(item) => counted(item),
            _ => None,
        })
        .map(|(pk, attr, org)| (pk, attr, org, 1))
        .collect();
    if changes.is_empty() {
        return None;
    }
    let mut all = steps.to_vec();
    all.extend(updates(changes));
    Some(all)
}

/// The counter step of a resolution: the review item at `item_pk` (`ORG#o#REVIEW#reason#key`)
/// leaves the open list.
pub fn resolved(org: &OrgId, item_pk: &str) -> Option<Step> {
    let reason = item_pk.strip_prefix(&org.pk("REVIEW#"))?.split_once('#')?.0;
    let change = (
        open_pk(org.as_str(), shard(item_pk)),
        reason.to_owned(),
        org.to_string(),
        -1,
    );
    updates([change]).pop()
}

/// An organisation's counters over some days.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counted {
    /// Stored events per (hour, kind).
    pub events: HashMap<(DateTime<Utc>, EventKind), u64>,
    /// Open review items per reason.
    pub open: BTreeMap<String, u64>,
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
}

/// The counters of `org` for the `days` up to and including `until`'s, and its open review
/// items: one `BatchGetItem` (`days` × 8 + 8 items) for a week.
pub async fn read(
    store: &Store,
    org: &OrgId,
    until: DateTime<Utc>,
    days: i64,
) -> Result<Counted, StoreError> {
    let last = until.date_naive();
    let dates: Vec<NaiveDate> = (0..days).map(|back| last - Duration::days(back)).collect();
    let mut pks: Vec<String> = dates
        .iter()
        .flat_map(|d| (0..SHARDS).map(move |s| day_pk(org.as_str(), *d, s)))
        .collect();
    pks.extend((0..SHARDS).map(|s| open_pk(org.as_str(), s)));
    let mut counted = Counted::default();
    for item in store.get_many(&pks).await?.into_iter().flatten() {
        let pk = item.str_of("pk")?;
        let is_open = pk.contains("#OPEN#");
        for (attr, value) in &item {
            let Some(number) = value.as_n().ok().and_then(|v| v.parse::<i64>().ok()) else {
                continue;
            };
            let number = number.max(0) as u64;
            if is_open {
                *counted.open.entry(attr.clone()).or_default() += number;
            } else if let Some(key) = hour_of(pk, attr) {
                *counted.events.entry(key).or_default() += number;
            }
        }
    }
    counted.open.retain(|_, n| *n > 0);
    Ok(counted)
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
    fn an_event_put_adds_one_to_its_kinds_hour_in_the_same_transaction() {
        let org = OrgId::generate();
        let steps = vec![event(&org, "p1", "2026-12-03T17:59:59Z")];
        let all = with_counts(&steps).expect("counted");
        assert_eq!(all.len(), 2);
        let Step::Update { pk, update } = &all[1] else {
            panic!("{all:?}")
        };
        assert!(pk.starts_with(&org.pk("COUNTS#2026-12-03#")), "{pk}");
        assert_eq!(
            update,
            &Update::new()
                .set("kind", s("counter"))
                .set("org", s(org.as_str()))
                .add("payment_17", n(1))
        );
    }

    #[test]
    fn two_counted_puts_on_one_counter_item_make_one_update() {
        let org = OrgId::generate();
        // Keys that land on the same shard.
        let (a, b) = (0..100)
            .map(|i| format!("k{i}"))
            .map(|k| (shard(&org.pk(&format!("PAYMENT#{k}"))), k))
            .fold(HashMap::<u64, Vec<String>>::new(), |mut m, (s, k)| {
                m.entry(s).or_default().push(k);
                m
            })
            .into_values()
            .find(|ks| ks.len() >= 2)
            .map(|ks| (ks[0].clone(), ks[1].clone()))
            .unwrap();
        let steps = vec![
            event(&org, &a, "2026-12-03T17:00:00Z"),
            event(&org, &b, "2026-12-03T17:30:00Z"),
        ];
        let all = with_counts(&steps).unwrap();
        assert_eq!(all.len(), 3, "{all:?}");
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
        let Some(Step::Update {
            pk: counter,
            update,
        }) = resolved(&org, &pk)
        else {
            panic!()
        };
        assert_eq!(counter, open_pk(org.as_str(), shard(&pk)));
        assert_eq!(
            update,
            Update::new()
                .set("kind", s("counter"))
                .set("org", s(org.as_str()))
                .add("unmatched_bank_row", n(-1))
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
