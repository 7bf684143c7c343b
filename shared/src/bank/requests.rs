//! What starts a statement import: the schedule's list of monobank integrations, and the API's
//! "import now" requests on a queue.

use crate::ids::IntegrationId;
use crate::store::item::Read;
use crate::store::{Store, StoreError};

/// Import requests from the API: one SQS message per "import now", taken by the import
/// function beside its schedule.
#[derive(Clone, Debug)]
pub struct Requests {
    pub sqs: aws_sdk_sqs::Client,
    pub queue_url: String,
}

/// One "import now": `{"integration_id"}`, the body of a request's queue message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub integration_id: IntegrationId,
}

impl Request {
    pub fn to_body(&self) -> String {
        serde_json::json!({"integration_id": self.integration_id.to_string()}).to_string()
    }

    /// A request's body; `None` when it names no integration.
    pub fn from_body(body: &str) -> Option<Self> {
        let value: serde_json::Value = serde_json::from_str(body).ok()?;
        let raw = value.get("integration_id")?.as_str()?;
        Some(Self {
            integration_id: IntegrationId::parse(raw).ok()?,
        })
    }
}

impl Requests {
    pub async fn send(&self, integration: &IntegrationId) -> Result<(), String> {
        let body = Request {
            integration_id: integration.clone(),
        }
        .to_body();
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

/// Every monobank bank integration, whatever its organisation: what a scheduled run walks.
pub async fn scheduled(store: &Store) -> Result<Vec<IntegrationId>, StoreError> {
    Ok(store
        .list(super::providers::IMPORTS_LIST, false, 1000)
        .await?
        .iter()
        .filter_map(|item| item.opt_str("id"))
        .filter_map(|id| IntegrationId::parse(id).ok())
        .collect())
}
