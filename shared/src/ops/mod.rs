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

use crate::ids::OrgId;
use crate::store::{Index, Item, Store, StoreError};
use crate::time;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The event kinds the operator sees, by the names the ops API uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    Payment,
    Message,
    Call,
    BankRow,
    Sms,
}

impl EventKind {
    pub const ALL: [Self; 5] = [
        Self::Payment,
        Self::Message,
        Self::Call,
        Self::BankRow,
        Self::Sms,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::Payment => "payment",
            Self::Message => "message",
            Self::Call => "call",
            Self::BankRow => "bank_row",
            Self::Sms => "sms",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == raw)
    }
}

/// The list of an organisation's events of one kind.
pub fn events_pk(org: &OrgId, kind: EventKind) -> String {
    org.pk(&format!("EVENTS#{}", kind.name()))
}

/// An event's place on its list: when it happened, then its key.
pub fn event_position(at: DateTime<Utc>, key: &str) -> String {
    format!("{}#{key}", time::format(at))
}

/// The list of an organisation's review items in one state (`open`, `resolved`).
pub fn review_pk(org: &OrgId, state: &str) -> String {
    org.pk(&format!("REVIEW#{state}"))
}

/// The list of an organisation's automation runs in one state.
pub fn runs_pk(org: &OrgId, state: &str) -> String {
    org.pk(&format!("RUNS#{state}"))
}

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
