//! What the import queue carries: the schedule's and the API's statement imports, and the steps
//! of a large CSV file.

use crate::ids::{IntegrationId, OrgId};
use crate::store::item::Read;
use crate::store::{Store, StoreError};
use chrono::{DateTime, Utc};

/// Import requests from the API: one SQS message per "import now", taken by the import
/// function beside its schedule.
#[derive(Clone, Debug)]
pub struct Requests {
    pub sqs: aws_sdk_sqs::Client,
    pub queue_url: String,
}

/// A request of the import queue: a monobank integration's statement ("import now", or the
/// schedule's), or the next steps of a large CSV file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    Statement { integration_id: IntegrationId },
    File { org: OrgId, import_id: String },
}

impl Request {
    pub fn to_body(&self) -> String {
        match self {
            Self::Statement { integration_id } => {
                serde_json::json!({"integration_id": integration_id.to_string()})
            }
            Self::File { org, import_id } => {
                serde_json::json!({"org": org.as_str(), "import_id": import_id})
            }
        }
        .to_string()
    }

    /// A request's body; `None` when it names no integration and no file import.
    pub fn from_body(body: &str) -> Option<Self> {
        let value: serde_json::Value = serde_json::from_str(body).ok()?;
        if let Some(raw) = value.get("integration_id").and_then(|v| v.as_str()) {
            return Some(Self::Statement {
                integration_id: IntegrationId::parse(raw).ok()?,
            });
        }
        Some(Self::File {
            org: OrgId::parse(value.get("org")?.as_str()?).ok()?,
            import_id: value.get("import_id")?.as_str()?.to_owned(),
        })
    }
}

impl Requests {
    pub async fn send(&self, request: &Request) -> Result<(), String> {
        let body = request.to_body();
        self.sqs
            .send_message()
            .queue_url(&self.queue_url)
            .message_body(body)
            .send()
            .await
            .map(drop)
            .map_err(|e| format!("{}", aws_sdk_sqs::error::DisplayErrorContext(e)))
    }
}

impl Requests {
    /// One request per integration, ten to a `SendMessageBatch`: the schedule's fan-out, so
    /// each integration's import is an invocation of its own. Any entry refused is an error (the
    /// schedule runs again; a request sent twice meets the lease).
    pub async fn send_all(&self, ids: &[IntegrationId]) -> Result<(), String> {
        use aws_sdk_sqs::types::SendMessageBatchRequestEntry as Entry;
        for chunk in ids.chunks(10) {
            let entries = chunk
                .iter()
                .enumerate()
                .map(|(i, id)| {
                    let body = Request::Statement {
                        integration_id: id.clone(),
                    }
                    .to_body();
                    Entry::builder()
                        .id(i.to_string())
                        .message_body(body)
                        .build()
                        .expect("id and body are set")
                })
                .collect();
            let out = self
                .sqs
                .send_message_batch()
                .queue_url(&self.queue_url)
                .set_entries(Some(entries))
                .send()
                .await
                .map_err(|e| format!("{}", aws_sdk_sqs::error::DisplayErrorContext(e)))?;
            if !out.failed.is_empty() {
                return Err(format!(
                    "{} of {} requests refused",
                    out.failed.len(),
                    chunk.len()
                ));
            }
        }
        Ok(())
    }
}

/// Integrations the schedule reads a page.
pub const SCHEDULED_PAGE: i32 = 500;

/// One page of every monobank bank integration, whatever its organisation (each with when it
/// was made), and the cursor of the next: what a scheduled run walks, page by page.
pub async fn scheduled(
    store: &Store,
    cursor: Option<&str>,
) -> Result<(Vec<(IntegrationId, Option<DateTime<Utc>>)>, Option<String>), StoreError> {
    let (items, next) = store
        .page(
            super::providers::IMPORTS_LIST,
            false,
            SCHEDULED_PAGE,
            cursor,
        )
        .await?;
    let ids = items
        .iter()
        .filter_map(|item| {
            let id = IntegrationId::parse(item.opt_str("id")?).ok()?;
            Some((id, item.opt_time("created_at")))
        })
        .collect();
    Ok((ids, next))
}
