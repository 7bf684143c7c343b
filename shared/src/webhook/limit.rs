//! Deliveries an integration may make a minute, counted once they are verified or refused and
//! before anything is parsed: a verified delivery spends the provider's budget, one that fails
//! verification a budget apart (a tenth of it), so junk sent at an integration's URL starves
//! neither the provider nor another integration.
//!
//! The budget is the deployment's, not one warm function's: a flood spread over many instances
//! of a webhook function meets the same limit as one. Each instance spends its first share of a
//! minute ([`Limiter::lease`] deliveries) without asking anyone, so an integration that sends a
//! few deliveries a minute costs no store call at all; past it, the instance takes each further
//! share from a counter in the table (`RATE#hook:{digest}#{minute}`, `RATE#junk:…` for the budget apart, in the organisation's
//! space: one conditional `UpdateItem` adding the share, and the first one its free share too,
//! while the count is under the limit) and spends it in memory, so a busy integration costs one
//! store call per lease. The minute's deliveries are at most the limit, one lease more (the
//! last share taken may go past it), and one free share per instance that never had to ask
//! (bounded by the function's concurrency); an instance whose share was refused answers 429
//! without asking again until the next minute.

use crate::ids::IntegrationId;
use crate::store::item::{n, s};
use crate::store::{Cond, Store, Update};
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use std::sync::Mutex;

/// Deliveries one integration may make a minute, unless `DELIVERIES_PER_MINUTE` says otherwise.
pub const DELIVERIES_PER_MINUTE: u64 = 1200;
/// Integrations a warm function keeps shares for; past it the older minutes are dropped.
const TRACKED: usize = 10_000;
/// The most deliveries one share covers.
const LEASE_MAX: u64 = 25;

/// One integration's share of one minute in this instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Share {
    minute: i64,
    granted: u64,
    used: u64,
    /// The minute's budget is spent: the table refused a share.
    spent: bool,
    /// A claim is being asked: deliveries meanwhile go through on it (only where one instance
    /// serves several at once: a Lambda instance serves one).
    claiming: bool,
}

/// What the memory says of one more delivery.
#[derive(Debug, PartialEq, Eq)]
enum Take {
    /// Counted against the share in hand.
    Counted,
    /// The share is used up: take this many more from the table.
    Claim(u64),
    /// The minute's budget is spent.
    Spent,
}

#[derive(Debug)]
pub struct Limiter {
    per_minute: u64,
    /// What its counters are named by (`hook`, or `junk` for deliveries that failed
    /// verification).
    budget: &'static str,
    shares: Mutex<HashMap<String, Share>>,
}

/// What a budget of deliveries that fail verification is of the provider's: a tenth.
pub const JUNK_SHARE: u64 = 10;

impl Limiter {
    pub fn new(per_minute: u64) -> Self {
        Self {
            per_minute,
            budget: "hook",
            shares: Mutex::default(),
        }
    }

    /// The budget apart of the deliveries that fail verification: a tenth of this one (at
    /// least one a minute), counted under its own name.
    pub fn for_junk(self) -> Self {
        Self {
            per_minute: (self.per_minute / JUNK_SHARE).max(1),
            budget: "junk",
            shares: Mutex::default(),
        }
    }

    /// `DELIVERIES_PER_MINUTE`, else [`DELIVERIES_PER_MINUTE`].
    pub fn from_env() -> Self {
        Self::new(
            crate::config::var("DELIVERIES_PER_MINUTE")
                .and_then(|v| v.parse().ok())
                .filter(|v| *v > 0)
                .unwrap_or(DELIVERIES_PER_MINUTE),
        )
    }

    pub fn per_minute(&self) -> u64 {
        self.per_minute
    }

    /// Deliveries one share covers: a fortieth of the limit, 1 to [`LEASE_MAX`].
    pub fn lease(&self) -> u64 {
        (self.per_minute / 40).clamp(1, LEASE_MAX)
    }

    /// Counts one delivery for `integration` at `now`: `Err(retry_after)` (seconds to the next
    /// minute) when the minute's budget is spent. A store that cannot be asked lets the
    /// delivery through (its own write meets the same store) and says so in a log line.
    pub async fn count(
        &self,
        store: &Store,
        integration: &IntegrationId,
        now: DateTime<Utc>,
    ) -> Result<(), u64> {
        let minute = now.timestamp().div_euclid(60);
        let retry_after = (60 - now.timestamp().rem_euclid(60)) as u64;
        let taking = match self.take(&integration.id, minute) {
            Take::Counted => return Ok(()),
            Take::Spent => return Err(retry_after),
            Take::Claim(taking) => taking,
        };
        let pk = integration.org.pk(&format!(
            "RATE#{}:{}#{minute}",
            self.budget,
            integration.digest()
        ));
        let claim = Update::new()
            .set("kind", s("rate"))
            .set("expires_at", n((minute + 2) * 60))
            .add("taken", n(taking))
            .when(Cond::Any(vec![
                Cond::Missing,
                Cond::Before("taken".into(), n(self.per_minute)),
            ]));
        let granted = match store.update_if(&pk, &claim).await {
            Ok(granted) => granted,
            Err(e) => {
                tracing::warn!(error.message = %e, "the deliveries' count could not be asked; let through");
                self.granted(&integration.id, minute, true);
                return Ok(());
            }
        };
        match self.granted(&integration.id, minute, granted) {
            true => Ok(()),
            false => Err(retry_after),
        }
    }

    fn take(&self, integration: &str, minute: i64) -> Take {
        let mut shares = self.shares.lock().unwrap_or_else(|e| e.into_inner());
        if shares.len() >= TRACKED && !shares.contains_key(integration) {
            shares.retain(|_, share| share.minute == minute);
        }
        // Each minute starts with a free share.
        let fresh = Share {
            minute,
            granted: self.lease(),
            used: 0,
            spent: false,
            claiming: false,
        };
        let share = shares.entry(integration.to_owned()).or_insert(fresh);
        if share.minute != minute {
            *share = fresh;
        }
        if share.spent {
            Take::Spent
        } else if share.used < share.granted || share.claiming {
            share.used += 1;
            Take::Counted
        } else {
            share.claiming = true;
            // The first claim of the minute accounts for the free share spent before it.
            let first = share.granted == self.lease();
            Take::Claim(if first { 2 } else { 1 } * self.lease())
        }
    }

    /// The table's answer to a claim: a lease more (and this delivery counted), or the minute
    /// spent. Whether the delivery goes on.
    fn granted(&self, integration: &str, minute: i64, granted: bool) -> bool {
        let mut shares = self.shares.lock().unwrap_or_else(|e| e.into_inner());
        let Some(share) = shares.get_mut(integration).filter(|s| s.minute == minute) else {
            return granted;
        };
        share.claiming = false;
        match granted {
            true => {
                share.granted += self.lease();
                share.used += 1;
            }
            false => share.spent = true,
        }
        granted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_is_spent_in_memory_and_claimed_again_when_used_up() {
        let limiter = Limiter::new(80);
        assert_eq!(limiter.lease(), 2);
        assert_eq!(limiter.take("a", 7), Take::Counted, "the free share");
        assert_eq!(limiter.take("a", 7), Take::Counted);
        assert_eq!(
            limiter.take("a", 7),
            Take::Claim(4),
            "the free share accounted too"
        );
        assert_eq!(
            limiter.take("a", 7),
            Take::Counted,
            "through while the claim is asked"
        );
        assert!(limiter.granted("a", 7, true));
        assert_eq!(limiter.take("a", 7), Take::Claim(2), "used up");
        assert!(!limiter.granted("a", 7, false));
        assert_eq!(
            limiter.take("a", 7),
            Take::Spent,
            "refused: not asked again"
        );
        assert_eq!(limiter.take("b", 7), Take::Counted, "another integration's");
        assert_eq!(limiter.take("a", 8), Take::Counted, "a new minute");
    }

    #[test]
    fn a_lease_is_a_fortieth_of_the_limit_within_bounds() {
        assert_eq!(Limiter::new(3).lease(), 1);
        assert_eq!(Limiter::new(240).lease(), 6);
        assert_eq!(Limiter::new(1200).lease(), 25);
        assert_eq!(Limiter::new(100_000).lease(), 25);
    }
}
