//! What the events of each kind cost, per organisation and day: the DynamoDB units (as the
//! store's meter read them off DynamoDB's answers, `aws::meter`), the SQS requests and the
//! invocations every function spent on them, the events' own and their consequences'. The
//! operator's summary divides them by the day's events of the kind (`ops::events::summary`).
//!
//! A function adds what an invocation spent to its in-memory [`Spent`], shared among the
//! organisations and kinds it worked for (a webhook: its delivery's; the fan-out and a worker:
//! evenly among the records and messages of the batch), and writes it at most once per
//! [`FLUSH_EVERY`]: one `UpdateItem` (`ADD`) per organisation and day and one for the
//! deployment, on items of no index. The figure is a meter, not a count: a function reclaimed
//! before it wrote loses what it held, and a write's own units are in the next.

use super::item::{n, s, Read};
use super::lists::EventKind;
use super::{Item, Store, StoreError, Update};
use crate::aws::Units;
use crate::ids::OrgId;
use chrono::{DateTime, NaiveDate, Utc};
use rust_decimal::Decimal;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

/// How often a warm function writes what it spent, at most.
pub const FLUSH_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// One share of what an invocation spent.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Share {
    pub units: Units,
    pub sqs: f64,
    pub invocations: f64,
}

impl std::ops::AddAssign for Share {
    fn add_assign(&mut self, other: Self) {
        self.units += other.units;
        self.sqs += other.sqs;
        self.invocations += other.invocations;
    }
}

impl Share {
    /// This share divided among `parts`.
    pub fn split(self, parts: usize) -> Self {
        let d = parts.max(1) as f64;
        Self {
            units: Units {
                read: self.units.read / d,
                write: self.units.write / d,
                index_write: self.units.index_write / d,
            },
            sqs: self.sqs / d,
            invocations: self.invocations / d,
        }
    }
}

/// The kind of event whose item `pk` is (an event's own key, or the item its consequences are
/// stored from: an incoming SMS's are its conversation message's, so they count as a message's).
pub fn kind_of_pk(pk: &str) -> Option<EventKind> {
    let rest = pk.strip_prefix("ORG#")?.split_once('#')?.1;
    let segment = rest.split('#').next()?;
    Some(match segment {
        "PAYMENT" => EventKind::Payment,
        "MESSAGE" => EventKind::Message,
        "CALL" => EventKind::Call,
        "BANKTX" => EventKind::BankRow,
        "SMS_EVENT" => EventKind::Sms,
        "LEAD" => EventKind::Lead,
        "CREDIT_NOTE" => EventKind::CreditNote,
        _ => return None,
    })
}

/// The organisation an item's `pk` belongs to.
pub fn org_of_pk(pk: &str) -> Option<OrgId> {
    OrgId::parse(pk.strip_prefix("ORG#")?.split_once('#')?.0).ok()
}

fn day_pk(scope: Option<&OrgId>, day: NaiveDate) -> String {
    match scope {
        Some(org) => org.pk(&format!("SPENT#{day}")),
        None => format!("ALL#SPENT#{day}"),
    }
}

/// The attributes of one kind's figures: write and read units, SQS requests, invocations.
fn attrs(kind: EventKind) -> [String; 4] {
    let k = kind.name();
    [
        format!("w_{k}"),
        format!("r_{k}"),
        format!("q_{k}"),
        format!("i_{k}"),
    ]
}

/// A figure as a DynamoDB number: at most six decimals, never a float's text.
fn number(value: f64) -> Decimal {
    Decimal::from_f64_retain(value)
        .unwrap_or_default()
        .round_dp(6)
}

/// An organisation's day, or (`None`) the deployment's.
type Scoped = (Option<OrgId>, NaiveDate);

/// The most figures a function holds unwritten (an organisation's day and kind each, and the
/// deployment's): past it, what more is spent is let go until the next write.
const PENDING_MAX: usize = 4096;

/// What a warm function spent and has not written yet.
#[derive(Debug, Default)]
pub struct Spent {
    pending: Mutex<Pending>,
}

#[derive(Debug, Default)]
struct Pending {
    /// By the item it is written to (an organisation's day, or the deployment's) and kind.
    shares: HashMap<(Scoped, EventKind), Share>,
    flushed: Option<Instant>,
}

impl Spent {
    /// Adds `share`, spent on `org`'s events of `kind` on `at`'s day (and so the deployment's),
    /// in memory only.
    pub fn add(&self, org: &OrgId, kind: EventKind, at: DateTime<Utc>, share: Share) {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let day = at.date_naive();
        for scope in [Some(org.clone()), None] {
            let entry = ((scope, day), kind);
            if pending.shares.len() >= PENDING_MAX && !pending.shares.contains_key(&entry) {
                continue;
            }
            *pending.shares.entry(entry).or_default() += share;
        }
    }

    /// Adds what `store` metered since its last take, with `sqs` requests and one invocation,
    /// shared evenly among `about` (the organisation and kind of each record, message or
    /// delivery the invocation worked on); nothing when it worked on none.
    pub fn invocation(
        &self,
        store: &Store,
        sqs: usize,
        about: &[(OrgId, EventKind)],
        at: DateTime<Utc>,
    ) {
        let (_, units) = store.metered();
        if about.is_empty() {
            return;
        }
        let share = Share {
            units,
            sqs: sqs as f64,
            invocations: 1.0,
        }
        .split(about.len());
        for (org, kind) in about {
            self.add(org, *kind, at, share);
        }
    }

    /// Writes what was added, if anything was and the last write is [`FLUSH_EVERY`] old: one
    /// `UpdateItem` per organisation and day, and one per day for the deployment. What cannot
    /// be written now is kept for the next.
    pub async fn flush_due(&self, store: &Store) {
        let taken: Vec<_> = {
            let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            let due = pending.flushed.is_none_or(|at| at.elapsed() >= FLUSH_EVERY);
            if !due || pending.shares.is_empty() {
                return;
            }
            pending.flushed = Some(Instant::now());
            pending.shares.drain().collect()
        };
        // One item per organisation and day, and one per day for the deployment.
        let mut items: HashMap<Scoped, Vec<(EventKind, Share)>> = HashMap::new();
        for ((scoped, kind), share) in taken {
            items.entry(scoped).or_default().push((kind, share));
        }
        for ((scope, day), shares) in items {
            let mut update = Update::new().set("kind", s("spent"));
            if let Some(org) = &scope {
                update = update.set("org", s(org.as_str()));
            }
            for (kind, share) in &shares {
                let [w, r, q, i] = attrs(*kind);
                update = update
                    .add(&w, n(number(share.units.write)))
                    .add(&r, n(number(share.units.read)))
                    .add(&q, n(number(share.sqs)))
                    .add(&i, n(number(share.invocations)));
            }
            if let Err(e) = store.update_if(&day_pk(scope.as_ref(), day), &update).await {
                tracing::warn!(error.message = %e, "what was spent not written; kept for the next");
                // Only this item's figures: the others are written.
                let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
                for (kind, share) in shares {
                    *pending
                        .shares
                        .entry(((scope.clone(), day), kind))
                        .or_default() += share;
                }
            }
        }
    }
}

/// A day's figures of one kind, as stored.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Day {
    pub write: f64,
    pub read: f64,
    pub sqs: f64,
    pub invocations: f64,
}

/// `day`'s figures per kind, of an organisation or (`None`) the deployment: one read.
pub async fn read(
    store: &Store,
    scope: Option<&OrgId>,
    day: NaiveDate,
) -> Result<HashMap<EventKind, Day>, StoreError> {
    let item = store.get(&day_pk(scope, day)).await?;
    Ok(figures(item.as_ref()))
}

fn figures(item: Option<&Item>) -> HashMap<EventKind, Day> {
    let Some(item) = item else {
        return HashMap::new();
    };
    let value = |attr: &str| {
        item.dec_of(attr)
            .ok()
            .and_then(|d| rust_decimal::prelude::ToPrimitive::to_f64(&d))
            .unwrap_or(0.0)
    };
    EventKind::ALL
        .into_iter()
        .map(|kind| {
            let [w, r, q, i] = attrs(kind);
            (
                kind,
                Day {
                    write: value(&w),
                    read: value(&r),
                    sqs: value(&q),
                    invocations: value(&i),
                },
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_items_key_names_its_kind_and_organisation() {
        let org = OrgId::parse("o7ab54e84e6e3").unwrap();
        assert_eq!(
            kind_of_pk(&org.pk("PAYMENT#stripe#pi_1")),
            Some(EventKind::Payment)
        );
        assert_eq!(
            kind_of_pk(&org.pk("MESSAGE#i1#42")),
            Some(EventKind::Message)
        );
        assert_eq!(kind_of_pk(&org.pk("SMS_EVENT#i1#e1")), Some(EventKind::Sms));
        assert_eq!(kind_of_pk(&org.pk("INVOICE#inv_1")), None);
        assert_eq!(org_of_pk(&org.pk("CALL#c#inbound")), Some(org));
    }

    #[test]
    fn a_share_divides_everything_it_holds() {
        let share = Share {
            units: Units {
                read: 3.0,
                write: 12.0,
                index_write: 6.0,
            },
            sqs: 3.0,
            invocations: 1.0,
        }
        .split(3);
        assert_eq!(share.units.write, 4.0);
        assert_eq!(share.units.index_write, 2.0);
        assert_eq!(share.sqs, 1.0);
        assert!((share.invocations - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(number(1.0 / 3.0).to_string(), "0.333333");
    }
}
