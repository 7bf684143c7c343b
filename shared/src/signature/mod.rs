//! One verifier per provider. Every verifier runs on the raw body before anything in it is read,
//! takes `now` as an argument, and compares in constant time.

pub mod monobank;
pub mod standard;
pub mod stripe;

use thiserror::Error;

/// Why a delivery was refused. All variants answer 401 `invalid_signature`; the detail is for the
/// sender and never contains a secret.
#[derive(Debug, Error, PartialEq, Eq)]
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

/// Signed timestamps more than this many seconds from now (either way) are refused.
pub const TOLERANCE_SECS: i64 = 300;

fn within_tolerance(timestamp: i64, now: i64) -> Result<(), SignatureError> {
    if (now - timestamp).abs() > TOLERANCE_SECS {
        Err(SignatureError::Expired)
    } else {
        Ok(())
    }
}
