//! Sends consequences to their SQS queues in batches of ten.

use super::{Consequence, QueueKind};
use crate::config::{require, ConfigError};
use aws_sdk_sqs::types::SendMessageBatchRequestEntry;
use thiserror::Error;

/// Queue URLs the fan-out sends consequences to.
#[derive(Clone, Debug)]
pub struct Queues {
    pub notifications: String,
    pub activity: String,
    pub automation: String,
}

impl Queues {
    pub fn from_env() -> Result<Self, ConfigError> {
        Ok(Self {
            notifications: require("NOTIFICATIONS_QUEUE_URL")?,
            activity: require("ACTIVITY_QUEUE_URL")?,
            automation: require("AUTOMATION_QUEUE_URL")?,
        })
    }
}

#[derive(Debug, Error)]
pub enum QueueError {
    #[error("SQS call failed")]
    Sqs(#[source] Box<aws_sdk_sqs::Error>),
    #[error("SQS refused {0} messages")]
    Refused(usize),
}

#[derive(Clone, Debug)]
pub struct Publisher {
    pub sqs: aws_sdk_sqs::Client,
    pub queues: Queues,
}

impl Publisher {
    fn url(&self, kind: QueueKind) -> &str {
        match kind {
            QueueKind::Notifications => &self.queues.notifications,
            QueueKind::Activity => &self.queues.activity,
            QueueKind::Automation => &self.queues.automation,
        }
    }

    /// Sends every consequence; any refusal fails the whole call, so the stream record is
    /// retried (a resend is harmless: every worker writes with a conditional key).
    pub async fn publish(&self, consequences: &[Consequence]) -> Result<usize, QueueError> {
        let mut sent = 0;
        for kind in [
            QueueKind::Notifications,
            QueueKind::Activity,
            QueueKind::Automation,
        ] {
            let bodies: Vec<String> = consequences
                .iter()
                .filter(|c| c.queue() == kind)
                .map(|c| serde_json::to_string(c).expect("consequences serialize"))
                .collect();
            for chunk in bodies.chunks(10) {
                let entries = chunk
                    .iter()
                    .enumerate()
                    .map(|(i, body)| {
                        SendMessageBatchRequestEntry::builder()
                            .id(i.to_string())
                            .message_body(body)
                            .build()
                            .expect("id and body are set")
                    })
                    .collect();
                let out = self
                    .sqs
                    .send_message_batch()
                    .queue_url(self.url(kind))
                    .set_entries(Some(entries))
                    .send()
                    .await
                    .map_err(|e| QueueError::Sqs(Box::new(e.into())))?;
                if !out.failed.is_empty() {
                    return Err(QueueError::Refused(out.failed.len()));
                }
                sent += out.successful.len();
            }
        }
        Ok(sent)
    }
}
