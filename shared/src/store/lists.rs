//! The keys of the operator's lists on the second index (`gsi2`): every event by kind and time,
//! review items and automation runs by state. Every item that belongs on one writes its key
//! here-named, so the domains and the operator's reads agree on one spelling.

use crate::ids::OrgId;
use crate::time;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The event kinds the operator sees, by the names the ops API uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    Payment,
    Message,
    Call,
    BankRow,
    Sms,
    Lead,
    CreditNote,
}

impl EventKind {
    pub const ALL: [Self; 7] = [
        Self::Payment,
        Self::Message,
        Self::Call,
        Self::BankRow,
        Self::Sms,
        Self::Lead,
        Self::CreditNote,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::Payment => "payment",
            Self::Message => "message",
            Self::Call => "call",
            Self::BankRow => "bank_row",
            Self::Sms => "sms",
            Self::Lead => "lead",
            Self::CreditNote => "credit_note",
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

/// A page of one of these lists, newest first, each item as `shown` shows it.
pub async fn page<T>(
    store: &super::Store,
    list: &str,
    limit: i32,
    cursor: Option<&str>,
    shown: fn(&super::Item) -> T,
) -> Result<(Vec<T>, Option<String>), super::StoreError> {
    let (items, next) = store
        .page_in(super::Index::States, list, None, true, limit, cursor)
        .await?;
    Ok((items.iter().map(shown).collect(), next))
}
