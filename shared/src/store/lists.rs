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

/// One of these lists, as a type: `pk` writes its key and `of` reads one back, the one pair
/// that spells it, so what a put on a list counts (`store::counters`) is decided by the list's
/// variant, not by the shape of a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum List {
    /// An organisation's events of one kind.
    Events { org: OrgId, kind: EventKind },
    /// An organisation's review items in one state (`open`, `resolved`).
    Review { org: OrgId, state: String },
    /// An organisation's automation runs in one state.
    Runs { org: OrgId, state: String },
}

impl List {
    pub fn pk(&self) -> String {
        match self {
            Self::Events { org, kind } => events_pk(org, *kind),
            Self::Review { org, state } => review_pk(org, state),
            Self::Runs { org, state } => runs_pk(org, state),
        }
    }

    /// The list a `gsi2pk` names, when it is one of these (a paused integration's is not).
    pub fn of(pk: &str) -> Option<Self> {
        let (org, list) = pk.strip_prefix("ORG#")?.split_once('#')?;
        let org = OrgId::parse(org).ok()?;
        let (name, rest) = list.split_once('#')?;
        let state = rest.to_owned();
        Some(match name {
            "EVENTS" => Self::Events {
                org,
                kind: EventKind::parse(rest)?,
            },
            "REVIEW" => Self::Review { org, state },
            "RUNS" => Self::Runs { org, state },
            _ => return None,
        })
    }
}

/// A page of one of these lists, newest first, each item as `shown` shows it.
pub async fn page<T>(
    store: &super::Store,
    list: &str,
    limit: i32,
    cursor: Option<&str>,
    shown: fn(&super::Item) -> T,
) -> Result<(Vec<T>, Option<String>), super::StoreError> {
    let list = (super::Index::States, list);
    store
        .newest_page(list, (limit, cursor), |item| Ok(shown(item)))
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_list_reads_back_from_its_key_and_no_other_key_is_one() {
        let org = OrgId::parse("o0123456789ab").unwrap();
        let lists = [
            List::Events {
                org: org.clone(),
                kind: EventKind::BankRow,
            },
            List::Review {
                org: org.clone(),
                state: "open".into(),
            },
            List::Runs {
                org: org.clone(),
                state: "needs_check".into(),
            },
        ];
        for list in lists {
            assert_eq!(List::of(&list.pk()), Some(list));
        }
        for other in [
            org.pk("INTEGRATIONS#paused"),
            org.pk("EVENTS#nothing"),
            "ALL#COUNTS#2026-12-07#1".to_owned(),
            "ORG#not-an-org#EVENTS#payment".to_owned(),
        ] {
            assert_eq!(List::of(&other), None, "{other}");
        }
    }
}
