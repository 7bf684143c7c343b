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
    pub matching: String,
}

impl Queues {
    pub fn from_env() -> Result<Self, ConfigError> {
        Ok(Self {
            notifications: require("NOTIFICATIONS_QUEUE_URL")?,
            activity: require("ACTIVITY_QUEUE_URL")?,
            automation: require("AUTOMATION_QUEUE_URL")?,
            matching: require("MATCHING_QUEUE_URL")?,
        })
    }
}

#[derive(Debug, Error)]
pub enum QueueError {
    #[error("SQS call failed")]
    Sqs(#[source] Box<aws_sdk_sqs::Error>),
    #[error("SQS could not take {0} messages for now")]
    Unsent(usize),
}

/// The most a message and a batch may hold (SQS's limit for both).
pub const MAX_BYTES: usize = 1024 * 1024;

/// A consequence SQS will never take (a character outside its set, a body over the limit):
/// retrying the stream record cannot help, so it is set aside for a person.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    pub key: String,
    pub reason: String,
}

/// What a publish did: how many were queued, and which were refused for good.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Published {
    pub sent: usize,
    /// The SQS requests it took.
    pub requests: usize,
    pub refused: Vec<Refused>,
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
            QueueKind::Matching => &self.queues.matching,
        }
    }

    /// Sends every consequence, in batches of at most ten and `MAX_BYTES`. A message SQS refuses
    /// as the sender's fault is `Refused` and the rest go on; any other failure fails the call,
    /// so the stream record is retried (a resend is harmless: every worker writes with a
    /// conditional key).
    pub async fn publish(&self, consequences: &[Consequence]) -> Result<Published, QueueError> {
        self.publish_from(None, consequences).await
    }

    /// [`Publisher::publish`] of a stored event's consequences: each message names `source`,
    /// the item that carries them, so the worker that applies the last one settles the event's
    /// waiting mark (`effects::waiting`).
    pub async fn publish_from(
        &self,
        source: Option<&str>,
        consequences: &[Consequence],
    ) -> Result<Published, QueueError> {
        let mut published = Published::default();
        for kind in [
            QueueKind::Notifications,
            QueueKind::Activity,
            QueueKind::Automation,
            QueueKind::Matching,
        ] {
            let mut bodies = Vec::new();
            for c in consequences.iter().filter(|c| c.queue() == kind) {
                let body = body(source, c);
                if body.len() > MAX_BYTES {
                    published.refused.push(Refused {
                        key: c.key(),
                        reason: format!("message of {} bytes is over SQS's limit", body.len()),
                    });
                } else {
                    bodies.push((c.key(), body));
                }
            }
            for batch in batches(&bodies) {
                self.send(kind, batch, &mut published).await?;
            }
        }
        Ok(published)
    }

    async fn send(
        &self,
        kind: QueueKind,
        batch: &[(String, String)],
        published: &mut Published,
    ) -> Result<(), QueueError> {
        let entries = batch
            .iter()
            .enumerate()
            .map(|(i, (_, body))| {
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
        published.requests += 1;
        let mut unsent = 0;
        for failed in &out.failed {
            let key = failed
                .id
                .parse::<usize>()
                .ok()
                .and_then(|i| batch.get(i))
                .map(|(key, _)| key.clone());
            match key {
                Some(key) if failed.sender_fault => published.refused.push(Refused {
                    key,
                    reason: format!(
                        "{}: {}",
                        failed.code,
                        failed.message.as_deref().unwrap_or("")
                    ),
                }),
                _ => unsent += 1,
            }
        }
        published.sent += out.successful.len();
        if unsent > 0 {
            return Err(QueueError::Unsent(unsent));
        }
        Ok(())
    }
}

/// A message's body: the consequence, and the item it came from when there is one.
fn body(source: Option<&str>, c: &Consequence) -> String {
    let mut value = serde_json::to_value(c).expect("consequences serialize");
    if let (Some(source), Some(fields)) = (source, value.as_object_mut()) {
        fields.insert(SOURCE.into(), source.into());
    }
    value.to_string()
}

/// The field of a message body that names the item whose consequence it is.
pub const SOURCE: &str = "source";

/// The item a message body names as its consequence's source, if any.
pub fn source_of(body: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Named {
        source: Option<String>,
    }
    serde_json::from_str::<Named>(body).ok()?.source
}

/// Consecutive runs of at most ten bodies and `MAX_BYTES` together.
fn batches(bodies: &[(String, String)]) -> Vec<&[(String, String)]> {
    let mut out = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, (_, body)) in bodies.iter().enumerate() {
        if i - start == 10 || bytes + body.len() > MAX_BYTES {
            out.push(&bodies[start..i]);
            (start, bytes) = (i, 0);
        }
        bytes += body.len();
    }
    if start < bodies.len() {
        out.push(&bodies[start..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_hold_at_most_ten_messages_and_the_byte_limit() {
        let small: Vec<(String, String)> = (0..23).map(|i| (i.to_string(), "x".into())).collect();
        let sizes: Vec<usize> = batches(&small).iter().map(|b| b.len()).collect();
        assert_eq!(sizes, [10, 10, 3]);
        let big: Vec<(String, String)> = (0..3)
            .map(|i| (i.to_string(), "x".repeat(MAX_BYTES / 2)))
            .collect();
        let sizes: Vec<usize> = batches(&big).iter().map(|b| b.len()).collect();
        assert_eq!(sizes, [2, 1]);
        assert!(batches(&[]).is_empty());
    }
}
