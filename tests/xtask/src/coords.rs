//! The stack's coordinates, as `target/{stage}-stack.json` holds them for tools and tests.

use crate::stack::REGION;
use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::path::Path;

/// Where the stack is and how to reach it; `target/local-stack.json` holds this.
pub struct Coordinates {
    pub api_url: String,
    pub aws_endpoint_url: String,
    pub table: String,
    pub admin_token: String,
    pub stack_name: String,
    /// The KMS key that seals integration secrets (`SECRETS_KEY_ID` of a function run by hand).
    pub secrets_key: String,
    /// The KMS HMAC key of keyed digests (`DIGEST_KEY_ID`).
    pub digest_key: String,
}

impl Coordinates {
    pub fn json(&self) -> Value {
        json!({
            "api_url": self.api_url,
            "aws_endpoint_url": self.aws_endpoint_url,
            "table": self.table,
            "admin_token": self.admin_token,
            "stack_name": self.stack_name,
            "secrets_key": self.secrets_key,
            "digest_key": self.digest_key,
            "region": REGION,
        })
    }

    pub fn write(&self, path: &Path) -> Result<()> {
        std::fs::write(path, serde_json::to_string_pretty(&self.json())?)?;
        Ok(())
    }

    pub fn read(path: &Path) -> Result<Self> {
        let raw = std::fs::read_to_string(path)
            .with_context(|| format!("reading {} (run `cargo xtask up` first)", path.display()))?;
        let v: Value = serde_json::from_str(&raw)?;
        let field = |name: &str| -> Result<String> {
            v[name]
                .as_str()
                .map(str::to_owned)
                .with_context(|| format!("{} has no {name}", path.display()))
        };
        Ok(Self {
            api_url: field("api_url")?,
            aws_endpoint_url: field("aws_endpoint_url")?,
            table: field("table")?,
            admin_token: field("admin_token")?,
            stack_name: field("stack_name")?,
            secrets_key: field("secrets_key")?,
            digest_key: field("digest_key")?,
        })
    }
}
