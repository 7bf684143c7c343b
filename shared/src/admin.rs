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
        // An empty token would be what a request without one sends: no token at all.
        if rotation.token.is_empty() {
            return None;
        }
        Some(Self {
            current: SecretString::from(rotation.token),
            previous: rotation
                .previous
                .filter(|token| !token.is_empty())
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

/// Who an admin token is in a record: `admin:adm_` and 16 hex digits of the token's keyed
/// digest ([`crate::vault::Digests`]), so two tokens of a rotation are told apart, neither is
/// written down, and a weak token cannot be guessed offline from its name (the digest needs the
/// deployment's KMS key). One `GenerateMac` call.
pub async fn admin_id(
    digests: &crate::vault::Digests,
    token: &str,
) -> Result<String, crate::vault::VaultError> {
    let digest = digests.digest("admin-token", token.as_bytes()).await?;
    Ok(format!("admin:adm_{}", &hex::encode(digest)[..16]))
}

/// The admin tokens' names a warm function has asked KMS for, by the token's SHA-256: at most a
/// few tokens are ever the admin (a rotation's two), so one call per token and invocation's life.
pub struct Names {
    digests: crate::vault::Digests,
    known: Mutex<Vec<([u8; 32], String)>>,
}

impl Names {
    pub fn new(digests: crate::vault::Digests) -> Self {
        Self {
            digests,
            known: Mutex::new(Vec::new()),
        }
    }

    /// `token`'s record name ([`admin_id`]); a KMS that cannot answer now is a 503.
    pub async fn of(&self, token: &str) -> Result<String, ApiError> {
        let hash: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let mut known = self.known.lock().await;
        if let Some((_, name)) = known.iter().find(|(h, _)| *h == hash) {
            return Ok(name.clone());
        }
        let name = admin_id(&self.digests, token).await.map_err(|e| {
            tracing::error!(error.message = %e, "the admin token's name could not be computed");
            ApiError::new(503, "unavailable", "temporarily unavailable; retry later")
        })?;
        if known.len() >= 4 {
            known.remove(0);
        }
        known.push((hash, name.clone()));
        Ok(name)
    }
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
        // The rotation's form with an empty token is no token, and an empty previous none.
        assert!(Tokens::parse(r#"{"token": ""}"#).is_none());
        let until = (Utc::now() + chrono::Duration::days(1)).to_rfc3339();
        let raw = format!(r#"{{"token": "t-1", "previous": "", "previous_until": "{until}"}}"#);
        let tokens = Tokens::parse(&raw).unwrap();
        assert!(!tokens.accept("", Utc::now()), "no header is no admin");
        assert!(tokens.accept("t-1", Utc::now()));
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
