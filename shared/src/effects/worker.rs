//! SQS batch glue for every worker: only failed message ids are reported back; a permanent
//! failure is acknowledged and parked as a review item; the last failing receive of a message
//! records a `dead_letter` review item before SQS moves it to the DLQ.

use super::Consequence;
use crate::ids::OrgId;
use crate::review::ReviewItem;
use crate::store::Store;
use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent, SqsMessage};
use chrono::{DateTime, Utc};
use serde_json::json;
use std::error::Error as StdError;
use std::future::Future;
use thiserror::Error;
use tracing::Instrument;

#[derive(Debug, Error)]
pub enum WorkError {
    /// Retrying can help (a store or network failure).
    #[error("transient: {0}")]
    Transient(#[source] Box<dyn StdError + Send + Sync>),
    /// Retrying cannot help; a person has to look. `reason` names the review item.
    #[error("permanent ({reason}): {detail}")]
    Permanent {
        reason: &'static str,
        detail: String,
    },
}

impl WorkError {
    pub fn transient(err: impl StdError + Send + Sync + 'static) -> Self {
        Self::Transient(Box::new(err))
    }
}

impl From<crate::store::StoreError> for WorkError {
    fn from(err: crate::store::StoreError) -> Self {
        Self::transient(err)
    }
}

/// Organisation-less problems (a message we cannot even parse) are filed here.
pub fn operator_org() -> OrgId {
    OrgId::parse("o000000000000").expect("valid literal")
}

fn receive_count(msg: &SqsMessage) -> u32 {
    msg.attributes
        .get("ApproximateReceiveCount")
        .and_then(|c| c.parse().ok())
        .unwrap_or(1)
}

async fn park(
    store: &Store,
    worker: &str,
    org: Option<&str>,
    key: String,
    reason: &str,
    detail: serde_json::Value,
    now: DateTime<Utc>,
) -> Result<(), crate::store::StoreError> {
    let org = org
        .and_then(|o| OrgId::parse(o).ok())
        .unwrap_or_else(operator_org);
    ReviewItem {
        org,
        kind: worker.to_owned(),
        reason: reason.to_owned(),
        key,
        at: now,
        detail,
    }
    .put(store)
    .await
}

/// Runs `handle` on every message of the batch (one after another) and reports the failures.
pub async fn process<F, Fut>(
    store: &Store,
    worker: &str,
    max_receives: u32,
    event: SqsEvent,
    handle: F,
) -> SqsBatchResponse
where
    F: Fn(Consequence) -> Fut,
    Fut: Future<Output = Result<(), WorkError>>,
{
    let mut failures = Vec::new();
    for msg in event.records {
        let id = msg.message_id.clone().unwrap_or_default();
        let now = Utc::now();
        let body = msg.body.clone().unwrap_or_default();
        let outcome = match serde_json::from_str::<Consequence>(&body) {
            Err(e) => {
                tracing::warn!(message_id = %id, error.message = %e, "malformed message");
                let org = serde_json::from_str::<serde_json::Value>(&body)
                    .ok()
                    .and_then(|v| v["org"].as_str().map(str::to_owned));
                park(
                    store,
                    worker,
                    org.as_deref(),
                    format!("message:{id}"),
                    "malformed_message",
                    json!({"error": e.to_string(), "body": body.chars().take(2000).collect::<String>()}),
                    now,
                )
                .await
                .map_err(WorkError::from)
            }
            Ok(consequence) => {
                let key = consequence.key();
                let span = tracing::info_span!("consequence", key = %key);
                match handle(consequence.clone()).instrument(span).await {
                    Ok(()) => Ok(()),
                    Err(WorkError::Permanent { reason, detail }) => {
                        tracing::warn!(%reason, %detail, "permanent failure; parked for review");
                        park(
                            store,
                            worker,
                            Some(consequence.org()),
                            key,
                            reason,
                            json!({"error": detail}),
                            now,
                        )
                        .await
                        .map_err(WorkError::from)
                    }
                    Err(err) => {
                        let chain = format!("{:?}", err);
                        tracing::error!(error.message = %err, error.cause_chain = %chain, "transient failure");
                        if receive_count(&msg) >= max_receives {
                            let _ = park(
                                store,
                                worker,
                                Some(consequence.org()),
                                key,
                                "dead_letter",
                                json!({"error": err.to_string(), "message_id": id, "receives": receive_count(&msg)}),
                                now,
                            )
                            .await;
                        }
                        Err(err)
                    }
                }
            }
        };
        if outcome.is_err() {
            let mut failure = BatchItemFailure::default();
            failure.item_identifier = id;
            failures.push(failure);
        }
    }
    let mut response = SqsBatchResponse::default();
    response.batch_item_failures = failures;
    response
}
