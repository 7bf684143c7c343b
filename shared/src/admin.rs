//! The admin token: given in the environment (a function run by hand), or read from Secrets
//! Manager (the deployed stack) and read again once `TTL` has passed, so a rotation takes
//! effect within a minute. Compared by digest, so no timing tells its bytes.
//!
//! The secret is the token itself, or `{"token", "previous", "previous_until"}`: during a
//! rotation the previous token is accepted too, until `previous_until` (RFC 3339) and no longer.

use crate::config::{self, Config, ConfigError};
use crate::http::{header, ApiError};
use chrono::{DateTime, Utc};
use lambda_http::Request;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::time::{Duration, Instant};
use tokio::sync::Mutex;

/// How long a token read from Secrets Manager is trusted before it is read again.
pub const TTL: Duration = Duration::from_secs(60);

/// `Authorization: Bearer <token>`.
pub fn bearer(req: &Request) -> Option<&str> {
    header(req, "authorization")?.strip_prefix("Bearer ")
}

/// The tokens that are the admin now: the current one and, during a declared overlap, the one
/// before it.
#[derive(Clone)]
pub struct Tokens {
    current: SecretString,
    previous: Option<(SecretString, DateTime<Utc>)>,
}

impl Tokens {
    /// A secret's string: a bare token, or the rotation's JSON.
    pub fn parse(raw: &str) -> Option<Self> {
        #[derive(Deserialize)]
        struct Rotation {
            token: String,
            previous: Option<String>,
            previous_until: Option<DateTime<Utc>>,
        }
        if !raw.trim_start().starts_with('{') {
            return (!raw.is_empty()).then(|| Self::from(raw.to_owned()));
        }
        let rotation: Rotation = serde_json::from_str(raw).ok()?;
        Some(Self {
            current: SecretString::from(rotation.token),
            previous: rotation
                .previous
                .zip(rotation.previous_until)
                .map(|(token, until)| (SecretString::from(token), until)),
        })
    }

    /// Whether `given` is an admin token at `now`.
    pub fn accept(&self, given: &str, now: DateTime<Utc>) -> bool {
        let same = |token: &SecretString| {
            Sha256::digest(given.as_bytes()) == Sha256::digest(token.expose_secret().as_bytes())
        };
        same(&self.current)
            || self
                .previous
                .as_ref()
                .is_some_and(|(token, until)| now < *until && same(token))
    }
}

impl From<String> for Tokens {
    fn from(token: String) -> Self {
        Self {
            current: SecretString::from(token),
            previous: None,
        }
    }
}

pub enum AdminToken {
    Given(Tokens),
    InSecretsManager {
        client: aws_sdk_secretsmanager::Client,
        arn: String,
        read: Mutex<Option<(Tokens, Instant)>>,
    },
}

impl From<String> for AdminToken {
    fn from(token: String) -> Self {
        Self::Given(Tokens::from(token))
    }
}

impl std::fmt::Debug for AdminToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Given(_) => f.write_str("AdminToken::Given([redacted])"),
            Self::InSecretsManager { arn, .. } => write!(f, "AdminToken::InSecretsManager({arn})"),
        }
    }
}

impl AdminToken {
    pub async fn from_env(config: &Config) -> Result<Self, ConfigError> {
        let Some(arn) = config::var("ADMIN_TOKEN_SECRET_ARN") else {
            return Ok(config::require("ADMIN_TOKEN")?.into());
        };
        let sdk = crate::aws::sdk_config(config.endpoint_url.as_deref()).await;
        Ok(Self::InSecretsManager {
            client: aws_sdk_secretsmanager::Client::new(&sdk),
            arn,
            read: Mutex::new(None),
        })
    }

    /// The tokens, read again when the last read is older than `TTL`; a Secrets Manager that
    /// cannot be read now is a 503 (a retry can help).
    pub async fn get(&self) -> Result<Tokens, ApiError> {
        let (client, arn, read) = match self {
            Self::Given(tokens) => return Ok(tokens.clone()),
            Self::InSecretsManager { client, arn, read } => (client, arn, read),
        };
        let mut cached = read.lock().await;
        if let Some((tokens, at)) = cached.as_ref() {
            if at.elapsed() < TTL {
                return Ok(tokens.clone());
            }
        }
        let out = client
            .get_secret_value()
            .secret_id(arn)
            .send()
            .await
            .map_err(|e| {
                tracing::error!(error.message = %e, error.cause_chain = ?e, "admin token could not be read");
                ApiError::new(503, "unavailable", "temporarily unavailable; retry later")
            })?;
        let tokens = out
            .secret_string
            .as_deref()
            .and_then(Tokens::parse)
            .ok_or_else(|| {
                tracing::error!(%arn, "the admin token secret holds no token");
                ApiError::new(500, "internal", "internal error")
            })?;
        *cached = Some((tokens.clone(), Instant::now()));
        Ok(tokens)
    }

    /// Whether `given` is an admin token now.
    pub async fn matches(&self, given: &str) -> Result<bool, ApiError> {
        Ok(self.get().await?.accept(given, Utc::now()))
    }
}

/// Who an admin token is in a record: `admin:` and the token's public name (as a key's), so two
/// tokens of a rotation are told apart and neither is written down.
pub fn admin_id(token: &str) -> String {
    format!("admin:{}", crate::orgs::key_id(token))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    #[test]
    fn a_bare_secret_is_the_one_token() {
        let tokens = Tokens::parse("s3cret-token-0123").unwrap();
        assert!(tokens.accept("s3cret-token-0123", Utc::now()));
        assert!(!tokens.accept("s3cret-token-0124", Utc::now()));
        assert!(Tokens::parse("").is_none());
    }

    #[test]
    fn the_previous_token_is_accepted_only_until_its_overlap_ends() {
        let until = Utc::now();
        let raw = serde_json::json!({
            "token": "new-token-0123456",
            "previous": "old-token-0123456",
            "previous_until": crate::time::format(until),
        })
        .to_string();
        let tokens = Tokens::parse(&raw).unwrap();
        assert!(tokens.accept("new-token-0123456", until + Duration::days(1)));
        assert!(tokens.accept("old-token-0123456", until - Duration::seconds(1)));
        assert!(!tokens.accept("old-token-0123456", until));
        assert!(!tokens.accept("other-token-01234", until - Duration::seconds(1)));
    }

    #[test]
    fn a_rotation_without_an_end_accepts_only_the_new_token() {
        let raw = r#"{"token": "new-token-0123456", "previous": "old-token-0123456"}"#;
        let tokens = Tokens::parse(raw).unwrap();
        assert!(!tokens.accept("old-token-0123456", Utc::now()));
    }
}
