//! The stored events of a stream batch, counted: the fan-out reads every stored event off the
//! table's stream anyway, so it adds them to their hour's counters there (`counters::day_pk`),
//! one update per counter item the batch touches, instead of two counter writes in every
//! event's own transaction. A figure trails its event by the fan-out's batch, about a second.
//!
//! Exactly once. A stream shard's records reach the fan-out in order, one batch at a time, and
//! a batch that failed comes again: whole, halved, or from a failed record on, with later
//! records after it. Each counter item keeps, per stream shard, the sequence number of the last
//! record it counted (its checkpoint, [`checkpoint_attr`]); an update adds only the records past
//! it and moves it, on the condition that it is still where it was read. The first try assumes
//! that nothing of the batch was counted (the usual case: one write an item); a refusal reads
//! the checkpoint and counts what lies past it. A day's events are spread over the counter
//! shards by the stream shard that counts them, so two stream shards seldom meet on an item.
//!
//! It relies on what Lambda does with a stream shard: one invocation at a time, records in
//! order, a failed batch handed over again from where it failed (the fan-out reports the first
//! record of a batch whose count failed). A record first seen after a later one of its shard was
//! counted would be taken for counted; Lambda hands a shard over in order, so none is.

use super::counters::{day_pk, hour_attr, listed, Scope};
use super::item::{n, s, Read};
use super::write::Rounds;
use super::{Cond, Item, Store, StoreError, Update};
use chrono::Timelike;
use std::collections::BTreeMap;

/// The attribute of a counter item that holds `shard`'s checkpoint (a string, so the readers
/// of the counts, which add numbers, pass it by).
pub fn checkpoint_attr(shard: &str) -> String {
    format!("counted#{shard}")
}

/// A sequence number as it sorts: stream sequence numbers are decimal strings of up to 40
/// digits, compared here as strings of one length.
fn sortable(sequence: &str) -> String {
    format!("{sequence:0>40}")
}

/// One counter item's share of a batch: its owner, and (sorted by sequence) each record's
/// sequence number and the attribute it adds one to.
type Share = (Option<String>, Vec<(String, String)>);

/// The counter items the stored events among `records` (a stream shard's, in order: sequence
/// number and new image) add to, each with its share.
fn shares(shard: &str, records: &[(&str, &Item)]) -> BTreeMap<String, Share> {
    let mut by_item: BTreeMap<String, Share> = BTreeMap::new();
    for (sequence, item) in records {
        let Some((org, kind, position)) = listed(item) else {
            continue;
        };
        let Some(at) = position
            .split_once('#')
            .and_then(|(at, _)| crate::time::parse(at))
        else {
            continue;
        };
        let attr = hour_attr(kind.name(), at.hour());
        for scope in [Scope::Org(org.as_str()), Scope::All] {
            let pk = day_pk(scope, at.date_naive(), scope.shard_of(shard));
            let owner = match scope {
                Scope::Org(org) => Some(org.to_owned()),
                Scope::All => None,
            };
            let entry = by_item.entry(pk).or_insert_with(|| (owner, Vec::new()));
            entry.1.push((sortable(sequence), attr.clone()));
        }
    }
    for (_, entries) in by_item.values_mut() {
        entries.sort();
    }
    by_item
}

/// Counts the stored events among `records`, the batch of stream shard `shard` (each record's
/// sequence number and new image; records of other items are passed by), once however often
/// the batch comes: the number of counter items written.
pub async fn count(
    store: &Store,
    shard: &str,
    records: &[(&str, &Item)],
) -> Result<usize, StoreError> {
    let shares = shares(shard, records);
    let cp = checkpoint_attr(shard);
    let counted = futures::future::join_all(
        shares
            .iter()
            .map(|(pk, (owner, entries))| count_on(store, pk, owner.as_deref(), &cp, entries)),
    )
    .await;
    counted.into_iter().sum()
}

/// Adds `entries` past the checkpoint `cp` to the counter item `pk`: 1 when it wrote.
async fn count_on(
    store: &Store,
    pk: &str,
    owner: Option<&str>,
    cp: &str,
    entries: &[(String, String)],
) -> Result<usize, StoreError> {
    let Some((first, _)) = entries.first() else {
        return Ok(0);
    };
    // `None`: not read yet (assumed before the batch); `Some(None)`: read, with no checkpoint.
    let mut read: Option<Option<String>> = None;
    let mut rounds = Rounds::new();
    while rounds.next().await {
        let past: Vec<&(String, String)> = match &read {
            Some(Some(at)) => entries.iter().filter(|(seq, _)| seq > at).collect(),
            _ => entries.iter().collect(),
        };
        let Some((last, _)) = past.last() else {
            return Ok(0);
        };
        let held = match &read {
            None => Cond::Any(vec![
                Cond::Missing,
                Cond::Lacks(cp.to_owned()),
                Cond::Before(cp.to_owned(), s(first)),
            ]),
            Some(Some(at)) => Cond::Equals(cp.to_owned(), s(at)),
            Some(None) => Cond::Any(vec![Cond::Missing, Cond::Lacks(cp.to_owned())]),
        };
        let mut adds: BTreeMap<&str, i64> = BTreeMap::new();
        for (_, attr) in &past {
            *adds.entry(attr.as_str()).or_default() += 1;
        }
        let mut update = Update::new()
            .set("kind", s("counter"))
            .set(cp, s(last.as_str()));
        if let Some(org) = owner {
            update = update.set("org", s(org));
        }
        let update = adds
            .into_iter()
            .fold(update, |u, (attr, k)| u.add(attr, n(k)))
            .when(held);
        if store.update_if(pk, &update).await? {
            return Ok(1);
        }
        let item = store.get(pk).await?;
        read = Some(item.and_then(|i| i.opt_str(cp).map(str::to_owned)));
    }
    Err(StoreError::Contended { pk: pk.to_owned() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::OrgId;
    use crate::store::item::Builder;

    fn event(org: &OrgId, key: &str, at: &str, kind: &str) -> Item {
        Builder::new(&org.pk(&format!("X#{key}")), "payment_event", org.as_str())
            .index(&org.pk(&format!("EVENTS#{kind}")), &format!("{at}#{key}"))
            .build()
    }

    #[test]
    fn a_batch_adds_to_one_item_per_scope_and_day_each_hour_and_kind_apart() {
        let org = OrgId::generate();
        let items = [
            event(&org, "a", "2026-12-03T17:10:00Z", "payment"),
            event(&org, "b", "2026-12-03T17:20:00Z", "payment"),
            event(&org, "c", "2026-12-03T18:00:00Z", "call"),
            event(&org, "d", "2026-12-04T00:00:01Z", "payment"),
            Builder::new(&org.pk("CONTACT#x"), "contact", org.as_str()).build(),
        ];
        let records: Vec<(&str, &Item)> = ["9", "10", "11", "12", "13"]
            .into_iter()
            .zip(items.iter())
            .collect();
        let shares = shares("shard-1", &records);
        assert_eq!(shares.len(), 4, "two days, two scopes: {shares:?}");
        let shard = Scope::All.shard_of("shard-1");
        let (owner, entries) = &shares[&day_pk(
            Scope::Org(org.as_str()),
            "2026-12-03".parse().unwrap(),
            Scope::Org(org.as_str()).shard_of("shard-1"),
        )];
        assert_eq!(owner.as_deref(), Some(org.as_str()));
        let attrs: Vec<&str> = entries.iter().map(|(_, a)| a.as_str()).collect();
        assert_eq!(attrs, ["payment_17", "payment_17", "call_18"]);
        assert!(
            entries[0].0 < entries[1].0,
            "9 sorts before 10: {entries:?}"
        );
        let all = &shares[&day_pk(Scope::All, "2026-12-04".parse().unwrap(), shard)];
        assert_eq!(all.0, None);
        assert_eq!(all.1.len(), 1);
    }
}
