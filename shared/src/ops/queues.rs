//! The deployment's consequence queues and their dead-letter queues: depths from SQS's own
//! attributes, a look into a DLQ that gives its messages back at once, and a redrive that moves
//! messages (all, or the ones named) back to their queue: sent to the queue first, deleted from
//! the DLQ after, so a crash between the two repeats a message (which its worker's key absorbs)
//! and never loses one.

use super::answers::{DeadLetter, QueueDepth};
use crate::config::{require, ConfigError};
use aws_sdk_sqs::types::{
    ChangeMessageVisibilityBatchRequestEntry, DeleteMessageBatchRequestEntry, Message,
    MessageSystemAttributeName, QueueAttributeName, SendMessageBatchRequestEntry,
};
use serde_json::Value;
use std::collections::BTreeMap;

/// A queue and its DLQ, by the name the ops API uses.
#[derive(Clone, Debug)]
pub struct Pair {
    pub name: &'static str,
    pub url: String,
    pub dlq: String,
}

#[derive(Clone, Debug)]
pub struct Queues {
    pub sqs: aws_sdk_sqs::Client,
    pub pairs: Vec<Pair>,
}

/// At most this many receives one redrive makes (ten messages each).
const REDRIVE_ROUNDS: usize = 100;

#[derive(Debug, thiserror::Error)]
#[error("SQS call failed")]
pub struct QueueError(#[source] Box<aws_sdk_sqs::Error>);

fn sqs_error<E>(e: aws_sdk_sqs::error::SdkError<E>) -> QueueError
where
    aws_sdk_sqs::Error: From<aws_sdk_sqs::error::SdkError<E>>,
{
    QueueError(Box::new(e.into()))
}

impl Queues {
    /// `{NAME}_QUEUE_URL` and `{NAME}_DLQ_URL` for notifications, automation and matching.
    pub fn from_env(sqs: aws_sdk_sqs::Client) -> Result<Self, ConfigError> {
        let pair = |name, url, dlq| -> Result<Pair, ConfigError> {
            Ok(Pair {
                name,
                url: require(url)?,
                dlq: require(dlq)?,
            })
        };
        Ok(Self {
            sqs,
            pairs: vec![
                pair(
                    "notifications",
                    "NOTIFICATIONS_QUEUE_URL",
                    "NOTIFICATIONS_DLQ_URL",
                )?,
                pair("automation", "AUTOMATION_QUEUE_URL", "AUTOMATION_DLQ_URL")?,
                pair("matching", "MATCHING_QUEUE_URL", "MATCHING_DLQ_URL")?,
            ],
        })
    }

    pub fn pair(&self, name: &str) -> Option<&Pair> {
        self.pairs.iter().find(|p| p.name == name)
    }

    async fn attribute(&self, url: &str, name: QueueAttributeName) -> Result<u64, QueueError> {
        let out = self
            .sqs
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(name.clone())
            .send()
            .await
            .map_err(sqs_error)?;
        Ok(out
            .attributes
            .and_then(|a| a.get(&name).and_then(|v| v.parse().ok()))
            .unwrap_or(0))
    }

    /// Per queue: messages waiting, in flight, and in its DLQ.
    pub async fn depths(&self) -> Result<BTreeMap<&'static str, QueueDepth>, QueueError> {
        let mut out = BTreeMap::new();
        for p in &self.pairs {
            let (waiting, in_flight, dead) = futures::try_join!(
                self.attribute(&p.url, QueueAttributeName::ApproximateNumberOfMessages),
                self.attribute(
                    &p.url,
                    QueueAttributeName::ApproximateNumberOfMessagesNotVisible
                ),
                self.attribute(&p.dlq, QueueAttributeName::ApproximateNumberOfMessages),
            )?;
            let depth = QueueDepth {
                waiting,
                in_flight,
                dead,
            };
            out.insert(p.name, depth);
        }
        Ok(out)
    }

    async fn receive(&self, url: &str, hide_secs: i32) -> Result<Vec<Message>, QueueError> {
        let out = self
            .sqs
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .visibility_timeout(hide_secs)
            .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
            .message_system_attribute_names(MessageSystemAttributeName::SentTimestamp)
            .message_system_attribute_names(
                MessageSystemAttributeName::ApproximateFirstReceiveTimestamp,
            )
            .send()
            .await
            .map_err(sqs_error)?;
        Ok(out.messages.unwrap_or_default())
    }

    /// Makes messages visible again at once.
    async fn give_back(&self, url: &str, messages: &[Message]) -> Result<(), QueueError> {
        for chunk in messages.chunks(10) {
            let entries = chunk
                .iter()
                .enumerate()
                .filter_map(|(i, m)| {
                    ChangeMessageVisibilityBatchRequestEntry::builder()
                        .id(i.to_string())
                        .receipt_handle(m.receipt_handle()?)
                        .visibility_timeout(0)
                        .build()
                        .ok()
                })
                .collect();
            self.sqs
                .change_message_visibility_batch()
                .queue_url(url)
                .set_entries(Some(entries))
                .send()
                .await
                .map_err(sqs_error)?;
        }
        Ok(())
    }

    /// Up to `limit` messages of a DLQ, each given back at once (none is consumed).
    pub async fn peek(&self, pair: &Pair, limit: usize) -> Result<Vec<DeadLetter>, QueueError> {
        let mut seen: Vec<Message> = Vec::new();
        while seen.len() < limit {
            let got = self.receive(&pair.dlq, 10).await?;
            if got.is_empty() {
                break;
            }
            seen.extend(got);
        }
        self.give_back(&pair.dlq, &seen).await?;
        seen.truncate(limit);
        Ok(seen.iter().map(dead_letter).collect())
    }

    /// Moves the DLQ's messages (those named in `ids`, or all) back to the queue, ten at a time
    /// (a batch send, then a batch delete of what was sent), for at most `budget`. Returns how
    /// many moved, and whether the DLQ may hold more to move (the budget ran out).
    pub async fn redrive(
        &self,
        pair: &Pair,
        ids: Option<&[String]>,
        budget: std::time::Duration,
    ) -> Result<(usize, bool), QueueError> {
        let started = std::time::Instant::now();
        let mut moved = 0;
        let mut kept: Vec<Message> = Vec::new();
        let mut more = false;
        for _ in 0..REDRIVE_ROUNDS {
            if started.elapsed() > budget {
                more = true;
                break;
            }
            let got = self.receive(&pair.dlq, 30).await?;
            if got.is_empty() {
                break;
            }
            let (wanted, others): (Vec<Message>, Vec<Message>) = got.into_iter().partition(|m| {
                ids.is_none_or(|ids| ids.iter().any(|id| Some(id.as_str()) == m.message_id()))
            });
            kept.extend(others);
            moved += self.move_batch(pair, &wanted).await?;
            if ids.is_some_and(|ids| moved >= ids.len()) {
                break;
            }
        }
        self.give_back(&pair.dlq, &kept).await?;
        Ok((moved, more))
    }

    /// Sends up to ten messages to the queue, then deletes from the DLQ those it took.
    async fn move_batch(&self, pair: &Pair, messages: &[Message]) -> Result<usize, QueueError> {
        if messages.is_empty() {
            return Ok(0);
        }
        let entries = messages.iter().enumerate().filter_map(|(i, m)| {
            SendMessageBatchRequestEntry::builder()
                .id(i.to_string())
                .message_body(m.body().unwrap_or_default())
                .build()
                .ok()
        });
        let sent = self
            .sqs
            .send_message_batch()
            .queue_url(&pair.url)
            .set_entries(Some(entries.collect()))
            .send()
            .await
            .map_err(sqs_error)?;
        let deletes: Vec<_> = sent
            .successful
            .iter()
            .filter_map(|ok| {
                let m = messages.get(ok.id.parse::<usize>().ok()?)?;
                DeleteMessageBatchRequestEntry::builder()
                    .id(ok.id.clone())
                    .receipt_handle(m.receipt_handle()?)
                    .build()
                    .ok()
            })
            .collect();
        let count = deletes.len();
        if count > 0 {
            self.sqs
                .delete_message_batch()
                .queue_url(&pair.dlq)
                .set_entries(Some(deletes))
                .send()
                .await
                .map_err(sqs_error)?;
        }
        Ok(count)
    }
}

/// A DLQ message as the operator sees it: `{"id", "body", "receives", "first_at"}`.
fn dead_letter(m: &Message) -> DeadLetter {
    let attribute =
        |name: MessageSystemAttributeName| m.attributes().and_then(|a| a.get(&name)).cloned();
    let first_at = attribute(MessageSystemAttributeName::SentTimestamp)
        .and_then(|ms| ms.parse::<i64>().ok())
        .and_then(chrono::DateTime::from_timestamp_millis)
        .map(crate::time::format);
    let body: Value = m
        .body()
        .map(|b| serde_json::from_str(b).unwrap_or_else(|_| Value::String(b.to_owned())))
        .unwrap_or(Value::Null);
    DeadLetter {
        id: m.message_id().map(str::to_owned),
        body,
        receives: attribute(MessageSystemAttributeName::ApproximateReceiveCount)
            .and_then(|r| r.parse::<u64>().ok()),
        first_at,
    }
}
