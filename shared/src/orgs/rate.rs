//! Per-key read limits: each key (or admin token, by its public name) may read so many times a
//! minute; one conditional `UpdateItem` on the key's counter of the minute decides, so the limit
//! holds across every warm function at once. The counter expires with the table's TTL.

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

/// A key's limits a minute: reads (`GET`) and writes (everything else).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub reads: u64,
    pub writes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            reads: READS_PER_MINUTE,
            writes: WRITES_PER_MINUTE,
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
        Self {
            reads: var("READS_PER_MINUTE", READS_PER_MINUTE),
            writes: var("WRITES_PER_MINUTE", WRITES_PER_MINUTE),
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
        Ok((read(store, org, &name, limit, now).await?, limit))
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
