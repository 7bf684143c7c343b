//! Standard Webhooks (standardwebhooks.com): HMAC-SHA256 over `{id}.{timestamp}.{body}` with the
//! base64-decoded `whsec_` secret; `v1,<b64>` signatures, space separated during key rotation.

use super::{header, within_tolerance, SignatureError, Verified, Verify};
use base64::{engine::general_purpose::STANDARD as B64, Engine};
use chrono::{DateTime, Utc};
use hmac::{Hmac, KeyInit, Mac};
use http::HeaderMap;
use sha2::Sha256;

pub const ID: &str = "webhook-id";
pub const TIMESTAMP: &str = "webhook-timestamp";
pub const SIGNATURE: &str = "webhook-signature";

/// How many bytes a secret must decode to: the specification's 24 to 64.
pub const KEY_BYTES: std::ops::RangeInclusive<usize> = 24..=64;

fn key(secret: &str) -> Result<Vec<u8>, SignatureError> {
    let encoded = secret.strip_prefix("whsec_").unwrap_or(secret);
    let key = B64.decode(encoded).map_err(|_| SignatureError::BadKey)?;
    if KEY_BYTES.contains(&key.len()) {
        Ok(key)
    } else {
        Err(SignatureError::BadKey)
    }
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

/// A Standard Webhooks verifier: the secret decoded once.
pub struct Verifier {
    key: Vec<u8>,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("standard::Verifier([redacted])")
    }
}

impl Verifier {
    pub fn new(secret: &str) -> Result<Self, SignatureError> {
        Ok(Self { key: key(secret)? })
    }
}

impl Verify for Verifier {
    fn verify(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        now: DateTime<Utc>,
    ) -> Result<Verified, SignatureError> {
        let id = header(headers, ID, ID)?;
        let ts_raw = header(headers, TIMESTAMP, TIMESTAMP)?;
        let signatures = header(headers, SIGNATURE, SIGNATURE)?;
        let timestamp: i64 = ts_raw.parse().map_err(|_| SignatureError::Malformed)?;
        within_tolerance(timestamp, now)?;
        let expected = mac(&self.key, id, ts_raw, body);
        let matches = signatures
            .split(' ')
            .filter_map(|s| s.strip_prefix("v1,"))
            .filter_map(|b64| B64.decode(b64).ok())
            .any(|sig| expected.clone().verify_slice(&sig).is_ok());
        if !matches {
            return Err(SignatureError::Mismatch);
        }
        Ok(Verified {
            id: Some(id.to_owned()),
            at: crate::time::from_unix(timestamp),
        })
    }
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
    const MSG_ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const TS: i64 = 1614265330;
    const BODY: &[u8] = br#"{"test": 2432232314}"#;
    const SIG: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    fn headers(sig: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(ID, MSG_ID.parse().unwrap());
        h.insert(TIMESTAMP, TS.to_string().parse().unwrap());
        if let Some(sig) = sig {
            h.insert(SIGNATURE, sig.parse().unwrap());
        }
        h
    }

    fn at(ts: i64) -> DateTime<Utc> {
        crate::time::from_unix(ts).unwrap()
    }

    fn verifier() -> Verifier {
        Verifier::new(SECRET).unwrap()
    }

    #[test]
    fn signing_reproduces_the_published_vector() {
        assert_eq!(sign(SECRET, MSG_ID, TS, BODY).unwrap(), SIG);
    }

    #[test]
    fn published_vector_verifies_among_rotated_signatures_and_proves_id_and_time() {
        let rotated = format!("v1,bm90IGl0 v1a,ed25519sig {SIG}");
        let verified = verifier().verify(&headers(Some(&rotated)), BODY, at(TS + 10));
        assert_eq!(
            verified,
            Ok(Verified {
                id: Some(MSG_ID.into()),
                at: Some(at(TS))
            })
        );
    }

    #[test]
    fn a_changed_body_is_refused() {
        let err = verifier().verify(&headers(Some(SIG)), br#"{"test": 1}"#, at(TS));
        assert_eq!(err, Err(SignatureError::Mismatch));
    }

    #[test]
    fn a_timestamp_six_minutes_off_is_refused_either_way() {
        for now in [TS + 360, TS - 360] {
            assert_eq!(
                verifier().verify(&headers(Some(SIG)), BODY, at(now)),
                Err(SignatureError::Expired)
            );
        }
    }

    #[test]
    fn missing_headers_are_named_and_bad_secrets_refused_at_build() {
        assert_eq!(
            verifier().verify(&headers(None), BODY, at(TS)),
            Err(SignatureError::Missing(SIGNATURE))
        );
        for weak in [
            "whsec_!!!",
            "whsec_",
            "",
            "whsec_AAAA",
            &format!("whsec_{}", B64.encode([7u8; 23])),
            &format!("whsec_{}", B64.encode([7u8; 65])),
        ] {
            assert_eq!(
                Verifier::new(weak).unwrap_err(),
                SignatureError::BadKey,
                "{weak}"
            );
        }
        assert!(Verifier::new(&format!("whsec_{}", B64.encode([7u8; 64]))).is_ok());
        assert_eq!(
            format!("{:?}", verifier()),
            "standard::Verifier([redacted])"
        );
    }
}
