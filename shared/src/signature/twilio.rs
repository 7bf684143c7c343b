//! Twilio: `X-Twilio-Signature` = base64 HMAC-SHA1(auth token, the URL Twilio called followed by
//! the POST parameters sorted by name, each name then value). There is no timestamp: a replay is
//! caught by the call's key, not by a window. The URL is the public one the provider was given,
//! fixed when the verifier is built for its integration.

use super::{header, SignatureError, Verified, Verify};
use base64::{engine::general_purpose::STANDARD as B64, Engine};
use chrono::{DateTime, Utc};
use hmac::{Hmac, KeyInit, Mac};
use http::HeaderMap;
use sha1::Sha1;

pub const SIGNATURE: &str = "x-twilio-signature";

/// The HMAC over the URL and the sorted form parameters of `body`.
fn mac(key: &[u8], url: &str, body: &[u8]) -> Hmac<Sha1> {
    let mut params: Vec<(String, String)> =
        url::form_urlencoded::parse(body).into_owned().collect();
    params.sort();
    let mut mac = Hmac::<Sha1>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(url.as_bytes());
    for (name, value) in &params {
        mac.update(name.as_bytes());
        mac.update(value.as_bytes());
    }
    mac
}

/// A verifier for one account's auth token and the one URL its callbacks come to.
pub struct Verifier {
    key: Vec<u8>,
    url: String,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "twilio::Verifier({}, [redacted])", self.url)
    }
}

impl Verifier {
    pub fn new(auth_token: &str, url: &str) -> Result<Self, SignatureError> {
        if auth_token.is_empty() {
            return Err(SignatureError::BadKey);
        }
        Ok(Self {
            key: auth_token.as_bytes().to_vec(),
            url: url.to_owned(),
        })
    }
}

impl Verify for Verifier {
    fn verify(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        _now: DateTime<Utc>,
    ) -> Result<Verified, SignatureError> {
        let signature = header(headers, SIGNATURE, "X-Twilio-Signature")?;
        let given = B64
            .decode(signature)
            .map_err(|_| SignatureError::Malformed)?;
        mac(&self.key, &self.url, body)
            .verify_slice(&given)
            .map_err(|_| SignatureError::Mismatch)?;
        Ok(Verified::default())
    }
}

/// Signs a form body as Twilio does (for tests, the demo and `cargo xtask send`).
pub fn sign(auth_token: &str, url: &str, body: &[u8]) -> String {
    B64.encode(
        mac(auth_token.as_bytes(), url, body)
            .finalize()
            .into_bytes(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    // Twilio's documented example (PROVIDERS.md).
    const URL: &str = "https://mycompany.com/myapp.php?foo=1&bar=2";
    const BODY: &[u8] = b"CallSid=CA1234567890ABCDE&Caller=%2B14158675310&Digits=1234&From=%2B14158675310&To=%2B18005551212";
    const EXPECTED: &str = "GvWf1cFY/Q7PnoempGyD5oXAezc=";

    fn headers(signature: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(SIGNATURE, signature.parse().unwrap());
        h
    }

    #[test]
    fn signing_reproduces_twilios_documented_vector() {
        assert_eq!(sign("12345", URL, BODY), EXPECTED);
        // The order of the parameters in the body does not matter.
        let shuffled = b"To=%2B18005551212&Digits=1234&CallSid=CA1234567890ABCDE&From=%2B14158675310&Caller=%2B14158675310";
        assert_eq!(sign("12345", URL, shuffled), EXPECTED);
    }

    #[test]
    fn the_vector_verifies_and_anything_else_is_refused() {
        let verifier = Verifier::new("12345", URL).unwrap();
        let now = Utc::now();
        assert!(verifier.verify(&headers(EXPECTED), BODY, now).is_ok());
        assert_eq!(
            verifier.verify(&headers(EXPECTED), b"CallSid=CA1234567890ABCDE", now),
            Err(SignatureError::Mismatch)
        );
        let elsewhere = Verifier::new("12345", "https://mycompany.com/other").unwrap();
        assert_eq!(
            elsewhere.verify(&headers(EXPECTED), BODY, now),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verifier.verify(&HeaderMap::new(), BODY, now),
            Err(SignatureError::Missing("X-Twilio-Signature"))
        );
        assert_eq!(
            verifier.verify(&headers("not base64!"), BODY, now),
            Err(SignatureError::Malformed)
        );
        assert!(Verifier::new("", URL).is_err());
    }
}
