//! The operator's view: what is stored, what waits for its consequences, what failed, what
//! needs a person, and the controlled retries. Counted from the data itself through the
//! table's second index (`gsi2`), which holds three kinds of lists, each sparse:
//!
//! - every event item under `ORG#{org}#EVENTS#{kind}`, positioned by time, so "today" and "this
//!   week" are two `Select=COUNT` queries on a key range, and "the latest 100" one query;
//! - every review item under `ORG#{org}#REVIEW#{state}`, moved from `open` to `resolved` by the
//!   conditional update that resolves it;
//! - every automation run under `ORG#{org}#RUNS#{state}`, moved with each state change.

pub mod answers;
pub mod chart;
pub mod consumers;
pub mod events;
pub mod hold;
pub mod ids;
pub mod queues;
pub mod recover;
pub mod review;
pub mod runs;

pub use crate::store::lists::{
    event_position, events_pk, page as page_of, review_pk, runs_pk, EventKind,
};
