//! Deliveries and duplicates per hour, for the operator's chart. Stored events come from the
//! organisation's counters (`store::counters`, kept in each event's transaction: exact).
//! A duplicate writes nothing on its own path (one read, no write): each warm edge counts its
//! duplicates in memory (`Duplicates`) and adds them to the hour's figure at most once per
//! [`FLUSH_EVERY`], on the path of a new event, which writes anyway. So the duplicates series is
//! approximate: a function reclaimed before it wrote its count loses it (the edge's `deliveries`
//! metric with `outcome=duplicate` counts every one).

use super::answers::Hour;
use super::EventKind;
use crate::ids::OrgId;
use crate::store::counters;
use crate::store::item::{n, s, Read};
use crate::store::{Store, StoreError, Update};
use chrono::{DateTime, Duration, DurationRound, Timelike, Utc};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

/// The hours the chart shows.
pub const HOURS: i64 = 24;
/// How often a warm edge writes the duplicates it counted, at most.
pub const FLUSH_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

fn hour_of(at: DateTime<Utc>) -> DateTime<Utc> {
    at.duration_trunc(Duration::hours(1)).unwrap_or(at)
}

/// One day's duplicates of an organisation: `d_{HH}` per hour.
fn duplicates_pk(org: &OrgId, at: DateTime<Utc>) -> String {
    org.pk(&format!("DUPS#{}", at.date_naive()))
}

fn duplicates_attr(at: DateTime<Utc>) -> String {
    format!("d_{:02}", at.hour())
}

/// Duplicates a warm edge counted and has not written yet, per organisation and hour.
#[derive(Debug, Default)]
pub struct Duplicates {
    pending: Mutex<Pending>,
}

#[derive(Debug, Default)]
struct Pending {
    counts: HashMap<(OrgId, DateTime<Utc>), u64>,
    flushed: Option<Instant>,
}

impl Duplicates {
    /// Counts one duplicate, in memory only.
    pub fn count(&self, org: &OrgId, now: DateTime<Utc>) {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        *pending
            .counts
            .entry((org.clone(), hour_of(now)))
            .or_default() += 1;
    }

    /// Writes what was counted, if anything was and the last write is [`FLUSH_EVERY`] old: one
    /// `UpdateItem` per organisation and hour. What cannot be written now is kept for the next.
    pub async fn flush_due(&self, store: &Store) {
        let taken: Vec<_> = {
            let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            let due = pending.flushed.is_none_or(|at| at.elapsed() >= FLUSH_EVERY);
            if !due || pending.counts.is_empty() {
                return;
            }
            pending.flushed = Some(Instant::now());
            pending.counts.drain().collect()
        };
        for ((org, hour), count) in taken {
            let update = Update::new()
                .set("kind", s("duplicates"))
                .set("org", s(org.as_str()))
                .add(&duplicates_attr(hour), n(count));
            if let Err(e) = store.update_if(&duplicates_pk(&org, hour), &update).await {
                tracing::warn!(error.message = %e, "duplicates not written; kept for the next");
                let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
                *pending.counts.entry((org, hour)).or_default() += count;
            }
        }
    }
}

/// The last [`HOURS`] hours, oldest first: `{"hour", "stored": {kind: n}, "duplicates"}`, from
/// two days of counters and two duplicates items: two reads whatever the volume.
pub async fn hours(
    store: &Store,
    org: &OrgId,
    now: DateTime<Utc>,
) -> Result<Vec<Hour>, StoreError> {
    let last = hour_of(now);
    let hours: Vec<DateTime<Utc>> = (0..HOURS)
        .rev()
        .map(|back| last - Duration::hours(back))
        .collect();
    let days = [duplicates_pk(org, hours[0]), duplicates_pk(org, last)];
    let (counted, duplicates) =
        futures::try_join!(counters::read(store, org, now, 2), store.get_many(&days),)?;
    let duplicates_at = |hour: DateTime<Utc>| {
        let day = duplicates_pk(org, hour);
        let item = days
            .iter()
            .position(|d| *d == day)
            .and_then(|i| duplicates[i].as_ref());
        item.and_then(|i| i.u64_of(&duplicates_attr(hour)).ok())
            .unwrap_or(0)
    };
    Ok(hours
        .iter()
        .map(|hour| Hour {
            hour: crate::time::format(*hour),
            stored: EventKind::ALL
                .iter()
                .map(|kind| (kind.name(), counted.at(*kind, *hour)))
                .filter(|(_, n)| *n > 0)
                .collect(),
            duplicates: duplicates_at(*hour),
        })
        .collect())
}
