//! Deliveries and duplicates per hour, for the operator's chart. A stored event is on its
//! kind's list already, so the hours' stored counts are read from there; a duplicate stores
//! nothing, so the webhook edge adds it to the hour's tally (one `UpdateItem` with `ADD`).

use super::{event_position, events_pk, EventKind};
use crate::ids::OrgId;
use crate::store::item::{n, s, Read};
use crate::store::{Index, Store, StoreError, Update};
use chrono::{DateTime, Duration, DurationRound, Utc};
use serde_json::{json, Value};

/// The hours the chart shows.
pub const HOURS: i64 = 24;
/// Events of one kind read for the chart at most, newest first (beyond it, the oldest hours
/// show fewer).
const EVENTS_READ_MAX: i32 = 5_000;

fn hour_of(at: DateTime<Utc>) -> DateTime<Utc> {
    at.duration_trunc(Duration::hours(1)).unwrap_or(at)
}

fn tally_pk(org: &OrgId, hour: DateTime<Utc>) -> String {
    org.pk(&format!("TALLY#{}", hour.format("%Y-%m-%dT%H")))
}

/// Counts one duplicate delivery in its hour.
pub async fn duplicate(store: &Store, org: &OrgId, now: DateTime<Utc>) -> Result<(), StoreError> {
    let update = Update::new()
        .set("kind", s("tally"))
        .set("org", s(org.as_str()))
        .add("duplicates", n(1));
    store
        .update_if(&tally_pk(org, hour_of(now)), &update)
        .await
        .map(|_| ())
}

/// The last [`HOURS`] hours, oldest first: `{"hour", "stored": {kind: n}, "duplicates"}`.
pub async fn hours(
    store: &Store,
    org: &OrgId,
    now: DateTime<Utc>,
) -> Result<Vec<Value>, StoreError> {
    let last = hour_of(now);
    let hours: Vec<DateTime<Utc>> = (0..HOURS)
        .rev()
        .map(|back| last - Duration::hours(back))
        .collect();
    let from = event_position(hours[0], "");
    let mut stored = vec![serde_json::Map::new(); hours.len()];
    for kind in EventKind::ALL {
        let (items, _) = store
            .page_in(
                Index::States,
                &events_pk(org, kind),
                Some((&from, "~")),
                true,
                EVENTS_READ_MAX,
                None,
            )
            .await?;
        for item in &items {
            let at = item
                .opt_str("gsi2sk")
                .and_then(|p| p.split_once('#'))
                .and_then(|(at, _)| crate::time::parse(at));
            let slot = at.and_then(|at| hours.iter().position(|h| hour_of(at) == *h));
            if let Some(slot) = slot {
                let count = stored[slot].entry(kind.name()).or_insert(json!(0));
                *count = json!(count.as_u64().unwrap_or(0) + 1);
            }
        }
    }
    let pks: Vec<String> = hours.iter().map(|h| tally_pk(org, *h)).collect();
    let tallies = store.get_many(&pks).await?;
    Ok(hours
        .iter()
        .zip(stored)
        .zip(tallies)
        .map(|((hour, stored), tally)| {
            let duplicates = tally.and_then(|t| t.u64_of("duplicates").ok()).unwrap_or(0);
            json!({"hour": crate::time::format(*hour), "stored": stored, "duplicates": duplicates})
        })
        .collect())
}
