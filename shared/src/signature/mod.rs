//! One verifier per provider, built once from an integration's key (svix's `Webhook::new`) and
//! then run on many raw bodies against their headers, before anything in a body is read. Every
//! verifier takes `now` as an argument and compares in constant time; `Debug` hides the key.

pub mod monobank;
pub mod standard;
pub mod stripe;
pub mod telegram;
pub mod twilio;
pub mod whatsapp;

use chrono::{DateTime, Utc};
use http::HeaderMap;
use thiserror::Error;

/// Why a delivery was refused. All variants answer 401 `invalid_signature`; the detail is for the
/// sender and never contains a secret.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum SignatureError {
    #[error("signature header {0} is missing")]
    Missing(&'static str),
    #[error("signature header is malformed")]
    Malformed,
    #[error("no signature matches")]
    Mismatch,
    #[error("timestamp is outside the 5-minute tolerance")]
    Expired,
    #[error("the integration's key is unusable")]
    BadKey,
}

/// What a verified delivery proves beyond its body: the signed delivery id and time, where the
/// scheme signs them. Read here once; parsers take them from here.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verified {
    pub id: Option<String>,
    pub at: Option<DateTime<Utc>>,
}

/// A verifier for one integration's key.
pub trait Verify: Send + Sync {
    fn verify(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        now: DateTime<Utc>,
    ) -> Result<Verified, SignatureError>;
}

/// Signed timestamps more than this many seconds from now (either way) are refused.
/// Any one provider's verifier: a source whose providers sign differently builds the one its
/// integration needs (`Box::new(stripe::Verifier::new(...)?)`).
pub type AnyVerifier = Box<dyn Verify>;

impl<V: Verify + ?Sized> Verify for Box<V> {
    fn verify(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        now: DateTime<Utc>,
    ) -> Result<Verified, SignatureError> {
        (**self).verify(headers, body, now)
    }
}

pub const TOLERANCE_SECS: i64 = 300;

/// `abs_diff`: no timestamp, however far off (`i64::MIN` included), can overflow.
fn within_tolerance(timestamp: i64, now: DateTime<Utc>) -> Result<(), SignatureError> {
    if now.timestamp().abs_diff(timestamp) > TOLERANCE_SECS.unsigned_abs() {
        Err(SignatureError::Expired)
    } else {
        Ok(())
    }
}

/// The header `name`; a missing one is named to the sender as `shown` (`Stripe-Signature`).
fn header<'a>(
    headers: &'a HeaderMap,
    name: &'static str,
    shown: &'static str,
) -> Result<&'a str, SignatureError> {
    headers
        .get(name)
        .ok_or(SignatureError::Missing(shown))?
        .to_str()
        .map_err(|_| SignatureError::Malformed)
}

/// What a verified body says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Parsed<E> {
    /// A status this source does not record (a payment still processing): answered 200,
    /// nothing written.
    Ignored(String),
    Event(E),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_at_the_ends_of_i64_are_expired_not_a_panic() {
        let now = Utc::now();
        for ts in [i64::MIN, i64::MIN + 1, i64::MAX, -1, 0] {
            assert_eq!(
                within_tolerance(ts, now),
                Err(SignatureError::Expired),
                "{ts}"
            );
        }
        assert_eq!(
            within_tolerance(now.timestamp() - TOLERANCE_SECS, now),
            Ok(())
        );
        assert_eq!(
            within_tolerance(now.timestamp() + TOLERANCE_SECS + 1, now),
            Err(SignatureError::Expired)
        );
    }
}
