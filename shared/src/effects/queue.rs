//! Sends consequences to their SQS queues in batches of ten.

use super::job::RECORDS;
use super::{Consequence, QueueKind};
use crate::config::{require, ConfigError};
use aws_sdk_sqs::types::SendMessageBatchRequestEntry;
use serde_json::json;
use thiserror::Error;

/// Queue URLs the fan-out sends consequences to.
#[derive(Clone, Debug)]
pub struct Queues {
    pub notifications: String,
    pub automation: String,
    pub matching: String,
}

impl Queues {
    pub fn from_env() -> Result<Self, ConfigError> {
        Ok(Self {
            notifications: require("NOTIFICATIONS_QUEUE_URL")?,
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

/// What a publish did: how many consequences were queued (an event's records are one message),
/// and which were refused for good.
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

    /// [`Publisher::publish`] of a stored event's consequences (what the fan-out does not write
    /// at once, or those a replay finds missing): each message names `source`, the item that
    /// carries them, so the worker that applies one takes its keys out of the event's waiting
    /// mark, and the one that empties it deletes it (`effects::waiting`).
    pub async fn publish_from(
        &self,
        source: Option<&str>,
        consequences: &[Consequence],
    ) -> Result<Published, QueueError> {
        let mut published = Published::default();
        for kind in [
            QueueKind::Notifications,
            QueueKind::Automation,
            QueueKind::Matching,
        ] {
            let mut bodies = Vec::new();
            for message in messages(source, kind, consequences) {
                if message.body.len() > MAX_BYTES {
                    published.refused.push(Refused {
                        reason: format!(
                            "message of {} bytes is over SQS's limit",
                            message.body.len()
                        ),
                        key: message.key,
                    });
                } else {
                    bodies.push(message);
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
        batch: &[Outgoing],
        published: &mut Published,
    ) -> Result<(), QueueError> {
        let entries = batch
            .iter()
            .enumerate()
            .map(|(i, message)| {
                SendMessageBatchRequestEntry::builder()
                    .id(i.to_string())
                    .message_body(&message.body)
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
                .map(|message| message.key.clone());
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
        published.sent += out
            .successful
            .iter()
            .filter_map(|sent| batch.get(sent.id.parse::<usize>().ok()?))
            .map(|message| message.holds)
            .sum::<usize>();
        if unsent > 0 {
            return Err(QueueError::Unsent(unsent));
        }
        Ok(())
    }
}

/// The messages (each with the key it is known by) of `consequences` bound for the queue
/// `kind`. What tells people of a stored event (its notifications and activity lines) is one
/// message (`effects::job::Records`); one over SQS's limit or holding a character SQS refuses
/// goes as one message a consequence instead. Everything else is one message a consequence.
fn messages(source: Option<&str>, kind: QueueKind, consequences: &[Consequence]) -> Vec<Outgoing> {
    let mut of_kind: Vec<&Consequence> =
        consequences.iter().filter(|c| c.queue() == kind).collect();
    // Notifications first: the one that can fail for good names the message.
    of_kind.sort_by_key(|c| !matches!(c, Consequence::Notification(_)));
    if let (Some(source), QueueKind::Notifications, Some(first)) = (source, kind, of_kind.first()) {
        let records = json!({SOURCE: source, RECORDS: of_kind}).to_string();
        if records.len() <= MAX_BYTES && sqs_accepts(&records) {
            return vec![Outgoing {
                key: first.key(),
                body: records,
                holds: of_kind.len(),
            }];
        }
    }
    of_kind
        .into_iter()
        .map(|c| Outgoing {
            key: c.key(),
            body: body(source, c),
            holds: 1,
        })
        .collect()
}

/// One message to send: the key it is known by, its body, and how many consequences it holds.
struct Outgoing {
    key: String,
    body: String,
    holds: usize,
}

/// Whether every character of `body` is one SQS takes in a message (#x9, #xA, #xD, #x20 to
/// #xD7FF, #xE000 to #xFFFD, #x10000 to #x10FFFF): a record SQS would refuse goes alone, so it
/// keeps no other record of its event from its queue.
fn sqs_accepts(body: &str) -> bool {
    body.chars().all(|c| {
        matches!(c, '\t' | '\n' | '\r' | ' '..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
    })
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
fn batches(bodies: &[Outgoing]) -> Vec<&[Outgoing]> {
    let mut out = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, message) in bodies.iter().enumerate() {
        if i - start == 10 || bytes + message.body.len() > MAX_BYTES {
            out.push(&bodies[start..i]);
            (start, bytes) = (i, 0);
        }
        bytes += message.body.len();
    }
    if start < bodies.len() {
        out.push(&bodies[start..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::payments::event::tests::sample;
    use serde_json::Value;

    fn sent(source: Option<&str>, kind: QueueKind, closes: bool) -> Vec<Value> {
        let all = super::super::derive::consequences(&sample(closes).to_item()).unwrap();
        messages(source, kind, &all)
            .into_iter()
            .map(|m| serde_json::from_str(&m.body).unwrap())
            .collect()
    }

    #[test]
    fn what_tells_people_of_an_event_is_one_message_naming_its_source() {
        let told = sent(Some("PK"), QueueKind::Notifications, false);
        assert_eq!(told.len(), 1);
        let types: Vec<&str> = told[0][RECORDS]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["notification", "activity", "activity"]);
        assert_eq!(&told[0][SOURCE], &json!("PK"));
        // The lookalike check is no record: a message of its own queue.
        assert_eq!(sent(Some("PK"), QueueKind::Matching, false).len(), 1);
        // A trigger goes to the automation queue, a message of its own.
        assert_eq!(sent(Some("PK"), QueueKind::Automation, true).len(), 1);
    }

    #[test]
    fn without_a_source_each_record_is_a_message() {
        let told = sent(None, QueueKind::Notifications, false);
        assert_eq!(told.len(), 3);
        assert!(told.iter().all(|m| m.get(RECORDS).is_none()));
    }

    #[test]
    fn sqs_takes_what_its_character_set_holds() {
        assert!(sqs_accepts("tab\tnew line\nüñí 🦀 \u{E000}\u{FFFD}"));
        assert!(!sqs_accepts("c\u{FFFF}"));
        assert!(!sqs_accepts("c\u{FFFE}"));
        assert!(!sqs_accepts("bell\u{7}"));
    }

    #[test]
    fn batches_hold_at_most_ten_messages_and_the_byte_limit() {
        let of = |body: String| Outgoing {
            key: "k".into(),
            body,
            holds: 1,
        };
        let small: Vec<Outgoing> = (0..23).map(|_| of("x".into())).collect();
        let sizes: Vec<usize> = batches(&small).iter().map(|b| b.len()).collect();
        assert_eq!(sizes, [10, 10, 3]);
        let big: Vec<Outgoing> = (0..3).map(|_| of("x".repeat(MAX_BYTES / 2))).collect();
        let sizes: Vec<usize> = batches(&big).iter().map(|b| b.len()).collect();
        assert_eq!(sizes, [2, 1]);
        assert!(batches(&[]).is_empty());
    }
}
