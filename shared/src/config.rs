//! Configuration read once in `main`; handlers never read the environment.

use secrecy::SecretString;
use thiserror::Error;

#[derive(Debug, Error)]
#[error("environment variable {0} is not set")]
pub struct MissingVar(pub &'static str);

/// What every function needs: the table, and optionally a local endpoint for all AWS clients.
#[derive(Clone, Debug)]
pub struct Config {
    pub table: String,
    pub endpoint_url: Option<String>,
    /// `local` on the local stack and in tests: outbound integrations may then target loopback.
    pub stage: String,
    /// Base of the public API URL, used to tell a provider where to send its webhooks.
    pub public_url: String,
    /// Token that may create organisations (api function only).
    pub admin_token: Option<SecretString>,
    /// The queues' `maxReceiveCount`: a worker's last failing receive files a review item.
    pub max_receive_count: u32,
    /// How long an automation call may take before its outcome counts as unclear.
    pub outbound_timeout_ms: u64,
    /// monobank's API, where a rotated merchant public key is fetched.
    pub monobank_api_url: String,
}

impl Config {
    pub fn from_env() -> Result<Self, MissingVar> {
        let var = |name: &'static str| std::env::var(name).ok().filter(|v| !v.is_empty());
        Ok(Self {
            table: var("TABLE_NAME").ok_or(MissingVar("TABLE_NAME"))?,
            endpoint_url: var("AWS_ENDPOINT_URL"),
            stage: var("STAGE").unwrap_or_else(|| "prod".into()),
            public_url: var("PUBLIC_URL").unwrap_or_default(),
            admin_token: var("ADMIN_TOKEN").map(SecretString::from),
            max_receive_count: var("MAX_RECEIVE_COUNT")
                .and_then(|v| v.parse().ok())
                .unwrap_or(5),
            outbound_timeout_ms: var("OUTBOUND_TIMEOUT_MS")
                .and_then(|v| v.parse().ok())
                .unwrap_or(5000),
            monobank_api_url: var("MONOBANK_API_URL")
                .unwrap_or_else(|| "https://api.monobank.ua".into()),
        })
    }

    /// Loopback targets are allowed only on a stage that says so.
    pub fn allows_loopback(&self) -> bool {
        matches!(self.stage.as_str(), "local" | "test")
    }
}

/// Queue URLs the fan-out sends consequences to.
#[derive(Clone, Debug)]
pub struct Queues {
    pub notifications: String,
    pub activity: String,
    pub automation: String,
}

impl Queues {
    pub fn from_env() -> Result<Self, MissingVar> {
        let var = |name: &'static str| std::env::var(name).map_err(|_| MissingVar(name));
        Ok(Self {
            notifications: var("NOTIFICATIONS_QUEUE_URL")?,
            activity: var("ACTIVITY_QUEUE_URL")?,
            automation: var("AUTOMATION_QUEUE_URL")?,
        })
    }
}
