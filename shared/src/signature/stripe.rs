//! Stripe: `Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>]`, v1 = hex HMAC-SHA256(secret, `{t}.{body}`)
//! with the `whsec_` secret used as-is.

use super::{header, within_tolerance, SignatureError, Verified, Verify};
use chrono::{DateTime, Utc};
use hmac::{Hmac, KeyInit, Mac};
use http::HeaderMap;
use sha2::Sha256;

pub const SIGNATURE: &str = "stripe-signature";

fn mac(secret: &[u8], timestamp: &str, body: &[u8]) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes keys of any length");
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

/// A Stripe endpoint verifier.
pub struct Verifier {
    secret: Vec<u8>,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("stripe::Verifier([redacted])")
    }
}

impl Verifier {
    pub fn new(secret: &str) -> Result<Self, SignatureError> {
        if secret.is_empty() {
            return Err(SignatureError::BadKey);
        }
        Ok(Self {
            secret: secret.as_bytes().to_vec(),
        })
    }
}

impl Verify for Verifier {
    fn verify(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        now: DateTime<Utc>,
    ) -> Result<Verified, SignatureError> {
        let header = header(headers, SIGNATURE, "Stripe-Signature")?;
        let mut timestamp = None;
        let mut signatures = Vec::new();
        for part in header.split(',') {
            match part.trim().split_once('=') {
                Some(("t", t)) => timestamp = Some(t),
                Some(("v1", sig)) => signatures.push(sig),
                _ => {}
            }
        }
        let ts_raw = timestamp.ok_or(SignatureError::Malformed)?;
        let ts: i64 = ts_raw.parse().map_err(|_| SignatureError::Malformed)?;
        within_tolerance(ts, now)?;
        let expected = mac(&self.secret, ts_raw, body);
        let matches = signatures
            .iter()
            .filter_map(|s| hex::decode(s).ok())
            .any(|sig| expected.clone().verify_slice(&sig).is_ok());
        if !matches {
            return Err(SignatureError::Mismatch);
        }
        Ok(Verified {
            id: None,
            at: crate::time::from_unix(ts),
        })
    }
}

/// The header a sender would attach.
pub fn sign(secret: &str, timestamp: i64, body: &[u8]) -> String {
    let tag = mac(secret.as_bytes(), &timestamp.to_string(), body)
        .finalize()
        .into_bytes();
    format!("t={timestamp},v1={}", hex::encode(tag))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Computed independently with Python's hmac module.
    const SECRET: &str = "whsec_test_stripe_secret";
    const BODY: &[u8] = br#"{"id":"evt_1","type":"payment_intent.succeeded"}"#;
    const V1: &str = "b2585e3ff743dea5d54af77485ea2cc857e0030709be2ffa4522a77a876231e5";

    fn headers(value: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(v) = value {
            h.insert(SIGNATURE, v.parse().unwrap());
        }
        h
    }

    fn verify(secret: &str, value: Option<&str>, now: i64) -> Result<Verified, SignatureError> {
        Verifier::new(secret).unwrap().verify(
            &headers(value),
            BODY,
            crate::time::from_unix(now).unwrap(),
        )
    }

    #[test]
    fn signing_reproduces_the_independent_vector() {
        assert_eq!(
            sign(SECRET, 1700000000, BODY),
            format!("t=1700000000,v1={V1}")
        );
    }

    #[test]
    fn any_matching_v1_is_accepted() {
        let header = format!("t=1700000000,v1=00ff,v0=abc,v1={V1}");
        assert!(verify(SECRET, Some(&header), 1700000100).is_ok());
    }

    #[test]
    fn wrong_secret_old_timestamp_and_missing_header_are_refused() {
        let header = format!("t=1700000000,v1={V1}");
        assert_eq!(
            verify("whsec_other", Some(&header), 1700000000),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify(SECRET, Some(&header), 1700000301),
            Err(SignatureError::Expired)
        );
        assert_eq!(
            verify(SECRET, None, 1700000000),
            Err(SignatureError::Missing("Stripe-Signature"))
        );
        assert_eq!(
            verify(SECRET, Some("v1=abc"), 1700000000),
            Err(SignatureError::Malformed)
        );
    }
}
