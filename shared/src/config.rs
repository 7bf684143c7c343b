//! Configuration read once in `main`; handlers never read the environment. What every function
//! needs is here; what one function needs is read by that function (`var`, `parse_var`).

use thiserror::Error;

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("environment variable {0} is not set")]
    Missing(&'static str),
    #[error("environment variable {0} is not a valid value: {1}")]
    Invalid(&'static str, String),
}

/// A set, non-empty variable.
pub fn var(name: &'static str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

pub fn require(name: &'static str) -> Result<String, ConfigError> {
    var(name).ok_or(ConfigError::Missing(name))
}

/// A variable parsed as `T`, `default` when unset; a value that does not parse is an error.
pub fn parse_var<T: std::str::FromStr>(name: &'static str, default: T) -> Result<T, ConfigError> {
    match var(name) {
        None => Ok(default),
        Some(raw) => raw.parse().map_err(|_| ConfigError::Invalid(name, raw)),
    }
}

/// Where a deployment runs: one of a fixed list (the template's `Stage` parameter allows the
/// same values). Only `local` and `test` let outbound calls go to loopback.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    Prod,
    Staging,
    /// The throughput benchmark's own stack.
    Bench,
    /// `cargo xtask up` on a developer's machine.
    Local,
    /// The test stack.
    Test,
}

impl std::str::FromStr for Stage {
    type Err = ();
    fn from_str(raw: &str) -> Result<Self, ()> {
        Ok(match raw {
            "prod" => Self::Prod,
            "staging" => Self::Staging,
            "bench" => Self::Bench,
            "local" => Self::Local,
            "test" => Self::Test,
            _ => return Err(()),
        })
    }
}

impl Stage {
    /// Loopback targets are allowed only on the local stack and in tests.
    pub fn allows_loopback(self) -> bool {
        matches!(self, Self::Local | Self::Test)
    }

    /// Whether the table's stream is the local emulator's, of one shard and no tumbling windows:
    /// a stream batch without a shard id is then the stream's one shard's.
    pub fn has_one_stream_shard(self) -> bool {
        matches!(self, Self::Local | Self::Test)
    }
}

/// What every function needs: the table, and optionally a local endpoint for all AWS clients.
#[derive(Clone, Debug)]
pub struct Config {
    pub table: String,
    pub endpoint_url: Option<String>,
    pub stage: Stage,
    /// `SECRETS_KEY_ID`: the KMS key that seals integration secrets.
    pub secrets_key_id: Option<String>,
    /// `DIGEST_KEY_ID`: the KMS HMAC key of keyed digests (a sealing's, an admin token's name).
    pub digest_key_id: Option<String>,
}

impl Config {
    pub fn from_env() -> Result<Self, ConfigError> {
        Ok(Self {
            table: require("TABLE_NAME")?,
            endpoint_url: var("AWS_ENDPOINT_URL"),
            stage: parse_var("STAGE", Stage::Prod)?,
            secrets_key_id: var("SECRETS_KEY_ID"),
            digest_key_id: var("DIGEST_KEY_ID"),
        })
    }

    pub fn allows_loopback(&self) -> bool {
        self.stage.allows_loopback()
    }

    /// The table, sealing secrets with the configured KMS key (one SDK config for both).
    pub async fn store(&self) -> crate::store::Store {
        let sdk = crate::aws::sdk_config(self.endpoint_url.as_deref()).await;
        // Every request and the units it consumed are metered by the store (`aws::Meter`).
        let client = aws_sdk_dynamodb::Client::new(&sdk);
        let store = crate::store::Store::new(client, self.table.clone());
        let kms = aws_sdk_kms::Client::new(&sdk);
        match &self.secrets_key_id {
            Some(key) => {
                let vault = crate::vault::Vault::new(kms.clone(), key.clone());
                store.with_vault(match &self.digest_key_id {
                    Some(digest) => vault.with_digests(crate::vault::Digests::new(kms, digest)),
                    None => vault,
                })
            }
            None => store,
        }
    }

    /// The keyed digests (`DIGEST_KEY_ID`), when configured.
    pub async fn digests(&self) -> Option<crate::vault::Digests> {
        let key = self.digest_key_id.as_ref()?;
        let sdk = crate::aws::sdk_config(self.endpoint_url.as_deref()).await;
        Some(crate::vault::Digests::new(
            aws_sdk_kms::Client::new(&sdk),
            key,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_listed_stages_parse_and_only_local_and_test_allow_loopback() {
        let allows = |raw: &str| raw.parse::<Stage>().map(Stage::allows_loopback);
        assert_eq!(allows("local"), Ok(true));
        assert_eq!(allows("test"), Ok(true));
        for stage in ["prod", "staging", "bench"] {
            assert_eq!(allows(stage), Ok(false), "{stage}");
        }
        for unknown in ["Local", "dev", "local ", ""] {
            assert!(unknown.parse::<Stage>().is_err(), "{unknown:?}");
        }
    }
}
