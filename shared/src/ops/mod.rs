//! The operator's view: what is stored, what waits for its consequences, what failed, what
//! needs a person, and the controlled retries. Counted from the data itself through the
//! table's second index (`gsi2`), which holds three kinds of lists, each sparse:
//!
//! - every event item under `ORG#{org}#EVENTS#{kind}`, positioned by time, so "today" and "this
//!   week" are two `Select=COUNT` queries on a key range, and "the latest 100" one query;
//! - every review item under `ORG#{org}#REVIEW#{state}`, moved from `open` to `resolved` by the
//!   conditional update that resolves it;
//! - every automation run under `ORG#{org}#RUNS#{state}`, moved with each state change.

pub mod chart;
pub mod events;
pub mod ids;
pub mod queues;
pub mod requests;
pub mod review;
pub mod runs;

use crate::store::{Index, Item, Store, StoreError};

pub use crate::store::lists::{event_position, events_pk, review_pk, runs_pk, EventKind};

/// A page of one of the operator's lists, newest first, each item as `shown` shows it.
pub async fn page_of(
    store: &Store,
    list: &str,
    limit: i32,
    cursor: Option<&str>,
    shown: fn(&Item) -> serde_json::Value,
) -> Result<(Vec<serde_json::Value>, Option<String>), StoreError> {
    let (items, next) = store
        .page_in(Index::States, list, None, true, limit, cursor)
        .await?;
    Ok((items.iter().map(shown).collect(), next))
}
