//! Per-key and per-organisation limits: each key (or admin token, by its public name) may read
//! and write so many times a minute, and an organisation's keys together so many more (five
//! keys' worth: a hundred keys are not a hundred budgets). One conditional `UpdateItem` on the
//! organisation's counter of the minute decides both (the key's count and the organisation's
//! are attributes of the one item), so the limits hold across every warm function at once at
//! the cost they had when only the key's was counted. The counter expires with the table's TTL.

use crate::ids::OrgId;
use crate::store::item::{n, s};
use crate::store::{Cond, Store, StoreError, Update};
use chrono::{DateTime, Utc};

/// Reads a key may make in one minute unless the deployment says otherwise (`READS_PER_MINUTE`).
pub const READS_PER_MINUTE: u64 = 300;

/// Whether a read may go on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    Allowed,
    /// Over the limit: seconds until the next minute.
    Limited {
        retry_after: u64,
    },
}

/// Writes a key may make in one minute unless the deployment says otherwise (`WRITES_PER_MINUTE`).
pub const WRITES_PER_MINUTE: u64 = 120;

/// An organisation's keys together, as many keys' worth of their limits.
pub const ORG_KEYS_WORTH: u64 = 5;

/// A key's limits a minute, reads (`GET`) and writes (everything else), and its organisation's
/// (every key of it together).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub reads: u64,
    pub writes: u64,
    pub org_reads: u64,
    pub org_writes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            reads: READS_PER_MINUTE,
            writes: WRITES_PER_MINUTE,
            org_reads: READS_PER_MINUTE * ORG_KEYS_WORTH,
            org_writes: WRITES_PER_MINUTE * ORG_KEYS_WORTH,
        }
    }
}

impl Limits {
    /// `READS_PER_MINUTE` and `WRITES_PER_MINUTE`, each its default when absent.
    pub fn from_env() -> Self {
        let var = |name: &'static str, default: u64| {
            crate::config::var(name)
                .and_then(|v| v.parse().ok())
                .filter(|v| *v > 0)
                .unwrap_or(default)
        };
        let (reads, writes) = (
            var("READS_PER_MINUTE", READS_PER_MINUTE),
            var("WRITES_PER_MINUTE", WRITES_PER_MINUTE),
        );
        Self {
            reads,
            writes,
            org_reads: var("ORG_READS_PER_MINUTE", reads * ORG_KEYS_WORTH),
            org_writes: var("ORG_WRITES_PER_MINUTE", writes * ORG_KEYS_WORTH),
        }
    }

    /// Counts one request of `who` before its work: a read or a write against its own limit.
    /// With the limit it was held to.
    pub async fn count(
        &self,
        store: &Store,
        (org, who): (Option<&OrgId>, &str),
        reads: bool,
        now: DateTime<Utc>,
    ) -> Result<(Read, u64), StoreError> {
        let (limit, name) = match reads {
            true => (self.reads, who.to_owned()),
            false => (self.writes, format!("w:{who}")),
        };
        let Some(org) = org else {
            return Ok((read(store, None, &name, limit, now).await?, limit));
        };
        let (all, org_limit) = match reads {
            true => ("all", self.org_reads),
            false => ("w:all", self.org_writes),
        };
        let minute = now.timestamp().div_euclid(60);
        let below = |attr: &str, limit: u64| {
            Cond::Any(vec![
                Cond::Lacks(attr.to_owned()),
                Cond::Before(attr.to_owned(), n(limit)),
            ])
        };
        let update = Update::new()
            .set("kind", s("rate"))
            .set("expires_at", n((minute + 2) * 60))
            .add(&name, n(1))
            .add(all, n(1))
            .when(Cond::Any(vec![
                Cond::Missing,
                Cond::All(vec![below(&name, limit), below(all, org_limit)]),
            ]));
        let pk = org.pk(&format!("RATE#{minute}"));
        if store.update_if(&pk, &update).await? {
            return Ok((Read::Allowed, limit));
        }
        // Refused: which limit (one read, on the refused path only).
        let counted = store.get(&pk).await?;
        let key_count = counted
            .as_ref()
            .and_then(|i| crate::store::item::Read::opt_dec(i, &name))
            .and_then(|d| rust_decimal::prelude::ToPrimitive::to_u64(&d))
            .unwrap_or(0);
        let retry_after = (60 - now.timestamp().rem_euclid(60)) as u64;
        let held_to = match key_count >= limit {
            true => limit,
            false => org_limit,
        };
        Ok((Read::Limited { retry_after }, held_to))
    }
}

/// Counts one request of `who` (a key's public name) in `org`'s space at `now`, if the
/// minute's count is below `limit`.
pub async fn read(
    store: &Store,
    org: Option<&OrgId>,
    who: &str,
    limit: u64,
    now: DateTime<Utc>,
) -> Result<Read, StoreError> {
    let minute = now.timestamp().div_euclid(60);
    let key = format!("RATE#{who}#{minute}");
    let pk = match org {
        Some(org) => org.pk(&key),
        None => key,
    };
    let update = Update::new()
        .set("kind", s("rate"))
        .set("expires_at", n((minute + 2) * 60))
        .add("reads", n(1))
        .when(Cond::Any(vec![
            Cond::Missing,
            Cond::Before("reads".into(), n(limit)),
        ]));
    Ok(match store.update_if(&pk, &update).await? {
        true => Read::Allowed,
        false => Read::Limited {
            retry_after: (60 - now.timestamp().rem_euclid(60)) as u64,
        },
    })
}
