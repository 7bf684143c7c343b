//! Telegram: the bot's webhook is set with a `secret_token`, and Telegram sends it back in
//! `X-Telegram-Bot-Api-Secret-Token` on every update. The token is compared in constant time.
//! There is no signature over the body and no timestamp: a replay is caught by the message's key.

use super::{header, SignatureError, Verified, Verify};
use chrono::{DateTime, Utc};
use http::HeaderMap;
use subtle::ConstantTimeEq;

pub const SECRET_TOKEN: &str = "x-telegram-bot-api-secret-token";

/// Telegram's rule for a secret token: 1 to 256 characters of `A-Z`, `a-z`, `0-9`, `_` and `-`.
pub fn valid_token(token: &str) -> bool {
    (1..=256).contains(&token.len())
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A fresh secret token: 32 random bytes as 64 hex characters.
pub fn generate_token() -> String {
    hex::encode(crate::ids::random_bytes::<32>())
}

pub struct Verifier {
    token: Vec<u8>,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("telegram::Verifier([redacted])")
    }
}

impl Verifier {
    pub fn new(secret_token: &str) -> Result<Self, SignatureError> {
        if !valid_token(secret_token) {
            return Err(SignatureError::BadKey);
        }
        Ok(Self {
            token: secret_token.as_bytes().to_vec(),
        })
    }
}

impl Verify for Verifier {
    fn verify(
        &self,
        headers: &HeaderMap,
        _body: &[u8],
        _now: DateTime<Utc>,
    ) -> Result<Verified, SignatureError> {
        let sent = header(headers, SECRET_TOKEN, "X-Telegram-Bot-Api-Secret-Token")?;
        // `ct_eq` on slices of different lengths is false without looking at the contents.
        if bool::from(sent.as_bytes().ct_eq(&self.token)) {
            Ok(Verified::default())
        } else {
            Err(SignatureError::Mismatch)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(token: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(SECRET_TOKEN, token.parse().unwrap());
        h
    }

    #[test]
    fn the_token_telegram_was_given_is_accepted_and_nothing_else() {
        // As Telegram's setWebhook describes it: the header carries the secret_token as set.
        let v = Verifier::new("my-Secret_token9").unwrap();
        let now = Utc::now();
        assert!(v.verify(&headers("my-Secret_token9"), b"{}", now).is_ok());
        for wrong in [
            "my-Secret_token",
            "my-Secret_token99",
            "MY-SECRET_TOKEN9",
            "x",
        ] {
            assert_eq!(
                v.verify(&headers(wrong), b"{}", now),
                Err(SignatureError::Mismatch),
                "{wrong}"
            );
        }
        assert_eq!(
            v.verify(&HeaderMap::new(), b"{}", now),
            Err(SignatureError::Missing("X-Telegram-Bot-Api-Secret-Token"))
        );
    }

    #[test]
    fn tokens_follow_telegrams_alphabet() {
        assert!(valid_token(&generate_token()));
        assert!(Verifier::new("").is_err());
        assert!(Verifier::new("has space").is_err());
        assert!(Verifier::new(&"a".repeat(257)).is_err());
    }
}
