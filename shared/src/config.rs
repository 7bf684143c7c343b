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

/// What every function needs: the table, and optionally a local endpoint for all AWS clients.
#[derive(Clone, Debug)]
pub struct Config {
    pub table: String,
    pub endpoint_url: Option<String>,
    /// `local` on the local stack and `test` in tests: outbound targets may then be loopback.
    pub stage: String,
}

impl Config {
    pub fn from_env() -> Result<Self, ConfigError> {
        Ok(Self {
            table: require("TABLE_NAME")?,
            endpoint_url: var("AWS_ENDPOINT_URL"),
            stage: var("STAGE").unwrap_or_else(|| "prod".into()),
        })
    }

    /// Loopback targets are allowed only on a stage that says so.
    pub fn allows_loopback(&self) -> bool {
        matches!(self.stage.as_str(), "local" | "test")
    }

    pub async fn store(&self) -> crate::store::Store {
        crate::store::Store::connect(&self.table, self.endpoint_url.as_deref()).await
    }
}
