//! Standard Webhooks (standardwebhooks.com): HMAC-SHA256 over `{id}.{timestamp}.{body}` with the
//! base64-decoded `whsec_` secret; `v1,<b64>` signatures, space separated during key rotation.

use super::{within_tolerance, SignatureError};
use base64::{engine::general_purpose::STANDARD as B64, Engine};
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The three headers a Standard Webhooks delivery carries.
pub struct Headers<'a> {
    pub id: Option<&'a str>,
    pub timestamp: Option<&'a str>,
    pub signature: Option<&'a str>,
}

fn key(secret: &str) -> Result<Vec<u8>, SignatureError> {
    let encoded = secret.strip_prefix("whsec_").unwrap_or(secret);
    B64.decode(encoded).map_err(|_| SignatureError::BadKey)
}

fn mac(key: &[u8], id: &str, timestamp: &str, body: &[u8]) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

/// Verifies a delivery; `now` is unix seconds.
pub fn verify(
    secret: &str,
    headers: &Headers<'_>,
    body: &[u8],
    now: i64,
) -> Result<(), SignatureError> {
    let id = headers.id.ok_or(SignatureError::Missing("webhook-id"))?;
    let ts_raw = headers
        .timestamp
        .ok_or(SignatureError::Missing("webhook-timestamp"))?;
    let signatures = headers
        .signature
        .ok_or(SignatureError::Missing("webhook-signature"))?;
    let timestamp: i64 = ts_raw.parse().map_err(|_| SignatureError::Malformed)?;
    within_tolerance(timestamp, now)?;
    let key = key(secret)?;
    let expected = mac(&key, id, ts_raw, body);
    let matches = signatures
        .split(' ')
        .filter_map(|s| s.strip_prefix("v1,"))
        .filter_map(|b64| B64.decode(b64).ok())
        .any(|sig| expected.clone().verify_slice(&sig).is_ok());
    matches.then_some(()).ok_or(SignatureError::Mismatch)
}

/// Signs a payload the way a sender does: `v1,<b64>`.
pub fn sign(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> Result<String, SignatureError> {
    let key = key(secret)?;
    let tag = mac(&key, id, &timestamp.to_string(), body)
        .finalize()
        .into_bytes();
    Ok(format!("v1,{}", B64.encode(tag)))
}

/// A fresh `whsec_` secret of 32 random bytes.
pub fn generate_secret() -> String {
    format!("whsec_{}", B64.encode(crate::ids::random_bytes::<32>()))
}

#[cfg(test)]
mod tests {
    use super::*;

    // The specification's published test vector.
    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const TS: i64 = 1614265330;
    const BODY: &[u8] = br#"{"test": 2432232314}"#;
    const SIG: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    fn headers(sig: &str) -> Headers<'_> {
        Headers {
            id: Some(ID),
            timestamp: Some("1614265330"),
            signature: Some(sig),
        }
    }

    #[test]
    fn signing_reproduces_the_published_vector() {
        assert_eq!(sign(SECRET, ID, TS, BODY).unwrap(), SIG);
    }

    #[test]
    fn published_vector_verifies_among_rotated_signatures() {
        let rotated = format!("v1,bm90IGl0 v1a,ed25519sig {SIG}");
        assert_eq!(verify(SECRET, &headers(&rotated), BODY, TS + 10), Ok(()));
    }

    #[test]
    fn a_changed_body_is_refused() {
        let err = verify(SECRET, &headers(SIG), br#"{"test": 1}"#, TS);
        assert_eq!(err, Err(SignatureError::Mismatch));
    }

    #[test]
    fn a_timestamp_six_minutes_off_is_refused_either_way() {
        assert_eq!(
            verify(SECRET, &headers(SIG), BODY, TS + 360),
            Err(SignatureError::Expired)
        );
        assert_eq!(
            verify(SECRET, &headers(SIG), BODY, TS - 360),
            Err(SignatureError::Expired)
        );
    }

    #[test]
    fn missing_headers_are_named() {
        let h = Headers {
            id: Some(ID),
            timestamp: Some("1614265330"),
            signature: None,
        };
        assert_eq!(
            verify(SECRET, &h, BODY, TS),
            Err(SignatureError::Missing("webhook-signature"))
        );
    }
}
