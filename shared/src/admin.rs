//! The admin token: given in the environment (a function run by hand), or read once from
//! Secrets Manager (the deployed stack); compared by digest, so no timing tells its bytes.

use crate::config::{self, Config, ConfigError};
use crate::http::{header, ApiError};
use lambda_http::Request;
use secrecy::{ExposeSecret, SecretString};
use sha2::{Digest, Sha256};

/// `Authorization: Bearer <token>`.
pub fn bearer(req: &Request) -> Option<&str> {
    header(req, "authorization")?.strip_prefix("Bearer ")
}

pub enum AdminToken {
    Given(SecretString),
    InSecretsManager {
        client: aws_sdk_secretsmanager::Client,
        arn: String,
        read: tokio::sync::OnceCell<SecretString>,
    },
}

impl From<String> for AdminToken {
    fn from(token: String) -> Self {
        Self::Given(SecretString::from(token))
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
            read: tokio::sync::OnceCell::new(),
        })
    }

    /// The token; a Secrets Manager that cannot be read now is a 503 (a retry can help).
    pub async fn get(&self) -> Result<&SecretString, ApiError> {
        let (client, arn, read) = match self {
            Self::Given(token) => return Ok(token),
            Self::InSecretsManager { client, arn, read } => (client, arn, read),
        };
        read.get_or_try_init(|| async {
            let out = client
                .get_secret_value()
                .secret_id(arn)
                .send()
                .await
                .map_err(|e| {
                    tracing::error!(error.message = %e, error.cause_chain = ?e, "admin token could not be read");
                    ApiError::new(503, "unavailable", "temporarily unavailable; retry later")
                })?;
            out.secret_string.map(SecretString::from).ok_or_else(|| {
                tracing::error!(%arn, "the admin token secret holds no string");
                ApiError::new(500, "internal", "internal error")
            })
        })
        .await
    }
}

impl AdminToken {
    /// Whether `given` is the admin token.
    pub async fn matches(&self, given: &str) -> Result<bool, ApiError> {
        let expected = self.get().await?;
        Ok(Sha256::digest(given.as_bytes()) == Sha256::digest(expected.expose_secret().as_bytes()))
    }
}
