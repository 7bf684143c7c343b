//! Deliveries an integration may make a minute, counted in the warm function before anything is
//! verified or parsed: junk sent at one integration's URL spends that integration's budget only,
//! and costs no store call (the integration's lookup is cached). The count is the warm
//! function's own, so the deployment's ceiling for one integration is the limit times the
//! function's instances (its reserved concurrency).

use chrono::{DateTime, Utc};
use std::collections::HashMap;
use std::sync::Mutex;

/// Deliveries one integration may make a minute, per warm function, unless
/// `DELIVERIES_PER_MINUTE` says otherwise.
pub const DELIVERIES_PER_MINUTE: u64 = 1200;
/// Integrations a warm function keeps counts for; past it the oldest minutes are dropped.
const TRACKED: usize = 10_000;

#[derive(Debug)]
pub struct Limiter {
    per_minute: u64,
    counts: Mutex<HashMap<String, (i64, u64)>>,
}

impl Limiter {
    pub fn new(per_minute: u64) -> Self {
        Self {
            per_minute,
            counts: Mutex::default(),
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

    /// Counts one delivery for `integration` at `now`: `Err(retry_after)` (seconds to the next
    /// minute) when the minute's count is at the limit.
    pub fn count(&self, integration: &str, now: DateTime<Utc>) -> Result<(), u64> {
        let minute = now.timestamp().div_euclid(60);
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        if counts.len() >= TRACKED && !counts.contains_key(integration) {
            counts.retain(|_, (m, _)| *m == minute);
        }
        let entry = counts.entry(integration.to_owned()).or_insert((minute, 0));
        if entry.0 != minute {
            *entry = (minute, 0);
        }
        if entry.1 >= self.per_minute {
            return Err((60 - now.timestamp().rem_euclid(60)) as u64);
        }
        entry.1 += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_integration_has_its_own_minute() {
        let limiter = Limiter::new(2);
        let now = crate::time::parse("2026-12-06T10:00:30Z").unwrap();
        assert_eq!(limiter.count("a", now), Ok(()));
        assert_eq!(limiter.count("a", now), Ok(()));
        assert_eq!(
            limiter.count("a", now),
            Err(30),
            "over: until the next minute"
        );
        assert_eq!(
            limiter.count("b", now),
            Ok(()),
            "another integration's budget"
        );
        let next = now + chrono::Duration::seconds(30);
        assert_eq!(limiter.count("a", next), Ok(()), "a new minute");
    }
}
