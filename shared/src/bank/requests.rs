//! What starts a statement import: the schedule's list of monobank integrations, and the API's
//! "import now" requests on a queue.

use crate::store::item::Read;
use crate::store::{Store, StoreError};

/// Import requests from the API: one SQS message per "import now", taken by the import
/// function beside its schedule.
#[derive(Clone, Debug)]
pub struct Requests {
    pub sqs: aws_sdk_sqs::Client,
    pub queue_url: String,
}

impl Requests {
    pub async fn send(&self, integration: &crate::ids::IntegrationId) -> Result<(), String> {
        let body = serde_json::json!({"integration_id": integration.id}).to_string();
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
pub async fn scheduled(store: &Store) -> Result<Vec<crate::ids::IntegrationId>, StoreError> {
    Ok(store
        .list(super::providers::IMPORTS_LIST, false, 1000)
        .await?
        .iter()
        .filter_map(|item| item.opt_str("id"))
        .filter_map(|id| crate::ids::IntegrationId::parse(id).ok())
        .collect())
}
