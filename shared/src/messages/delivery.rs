//! One messenger delivery: its messages (each recorded once), its status events, and in a batch
//! the messages that break a limit, each kept for a person while the others are stored.

use super::{apply_status, record, Incoming, Message, Posted, StatusEvent, BATCH_MAX, TEXT_MAX};
use crate::ids::{EventKey, ExternalId};
use crate::integrations::Integration;
use crate::review::{Kind, Reason, ReviewItem};
use crate::signature::Parsed;
use crate::store::{Answer, Store, StoreError, Written};
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{json, Value};
use std::time::Instant;
use utoipa::ToSchema;

/// A verified delivery, checked.
#[derive(Clone, Debug)]
pub struct Delivery {
    pub messages: Vec<Incoming>,
    pub statuses: Vec<StatusEvent>,
    /// Messages of a batch that break a limit, with the reason.
    pub rejected: Vec<(Incoming, String)>,
    /// Whether the messenger delivers batches (WhatsApp): then the answer is the batch form.
    pub batch: bool,
}

impl Delivery {
    /// Checks what a messenger posted. One message alone that breaks a limit is an error (the
    /// whole body is kept raw for a person by the edge); in a batch it is set aside.
    pub fn check(posted: Posted) -> Result<Parsed<Self>, String> {
        let (messages, statuses, unread, batch) = match posted {
            Posted::Ignored(kind) => return Ok(Parsed::Ignored(kind)),
            Posted::Delivery {
                messages,
                statuses,
                unread,
                batch,
            } => (messages, statuses, unread, batch),
        };
        if messages.len() + statuses.len() + unread.len() > BATCH_MAX {
            return Err(format!(
                "more than {BATCH_MAX} messages and statuses in one delivery"
            ));
        }
        let (mut good, mut rejected) = (Vec::new(), unread);
        for m in messages.into_iter().map(|m| m.printable().cut_cosmetic()) {
            match m.check() {
                Ok(()) => good.push(m),
                Err(reason) if !batch => return Err(reason),
                Err(reason) => rejected.push((m, reason)),
            }
        }
        // A status id becomes part of a key: one over the key limits is no message of ours.
        let statuses: Vec<StatusEvent> = statuses
            .into_iter()
            .filter(|s| {
                let fits =
                    crate::fields::reference("status id", &s.provider_id, crate::fields::KEY_MAX)
                        .is_ok();
                if !fits {
                    tracing::info!("skipped a status whose id is over the key limits");
                }
                fits
            })
            .collect();
        if good.is_empty() && statuses.is_empty() {
            if let Some((_, reason)) = rejected.first() {
                return Err(reason.clone());
            }
        }
        Ok(Parsed::Event(Self {
            messages: good,
            statuses,
            rejected,
            batch,
        }))
    }
}

impl Answer for Message {
    /// The message's line: `{"message_id", "key", "conversation_id"}`.
    fn answer(&self) -> Value {
        serde_json::to_value(self.line(false)).expect("a message's answer serialises")
    }
}

impl Message {
    /// The message's line in an answer.
    fn line(&self, duplicate: bool) -> MessageAnswer {
        MessageAnswer {
            duplicate,
            message_id: self.provider_id.clone(),
            key: self.key().as_str().to_owned(),
            conversation_id: self.conversation_id.clone(),
        }
    }
}

/// One message of a delivery (`duplicate`: it was stored before).
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct MessageAnswer {
    pub duplicate: bool,
    /// The provider's id (Telegram: `chat.id:message_id`).
    pub message_id: String,
    /// `message:{integration_id}:{message_id}`.
    pub key: String,
    pub conversation_id: String,
}

/// A message of a batch that breaks a limit: kept for a person with a review item.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct MessageSetAside {
    pub message_id: String,
    /// `unparseable`.
    pub status: &'static str,
    /// The review item's reason, `unparseable_message`.
    pub review: &'static str,
    pub detail: String,
}

/// A batch's line: a message stored (or stored before), or one set aside.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum BatchLine {
    Stored(MessageAnswer),
    SetAside(MessageSetAside),
}

/// The batch form (WhatsApp, always; a delivery of statuses only): every message with its
/// own `duplicate`, and how many statuses came.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct BatchAnswer {
    pub messages: Vec<BatchLine>,
    pub statuses: usize,
    /// How many of them moved a message's status forward.
    pub statuses_applied: usize,
}

/// What a delivery did.
#[derive(Clone, Debug)]
pub struct Delivered {
    pub messages: Vec<(EventKey, Written<Message>)>,
    /// The answer lines of the messages set aside for a person.
    pub rejected: Vec<MessageSetAside>,
    pub statuses: usize,
    pub applied: usize,
    /// The batch answer, when the delivery is answered in that form.
    pub batch: Option<Value>,
    /// The delivery's key for logs when it carried no message: its first status's.
    pub key: EventKey,
}

/// Records every message of `delivery` once and applies its statuses. Every download of the
/// delivery together stays before `deadline`, so each message is written before the function's
/// own timeout.
pub async fn deliver(
    store: &Store,
    media: &super::media::Media,
    integration: &Integration,
    delivery: &Delivery,
    now: DateTime<Utc>,
    deadline: Instant,
) -> Result<Delivered, StoreError> {
    let mut messages = Vec::with_capacity(delivery.messages.len());
    for incoming in &delivery.messages {
        let written = record(store, media, integration, incoming, now, deadline).await?;
        messages.push((written.value().key(), written));
    }
    let mut rejected = Vec::new();
    for (incoming, reason) in &delivery.rejected {
        rejected.push(set_aside(store, integration, incoming, reason, now).await?);
    }
    let mut applied = 0usize;
    for status in &delivery.statuses {
        if apply_status(store, integration.org(), &integration.id.id, status, now).await? {
            applied += 1;
        }
    }
    // At debug, as a payment's "payment stored": a line an event is log volume on every delivery.
    tracing::debug!(
        messages = messages.len() + rejected.len(),
        statuses = delivery.statuses.len(),
        applied,
        "delivery recorded"
    );
    let first_status = delivery
        .statuses
        .first()
        .map_or("", |s| s.provider_id.as_str());
    let key = EventKey::new("status", &format!("{}:{first_status}", integration.id.id));
    let mut delivered = Delivered {
        messages,
        rejected,
        statuses: delivery.statuses.len(),
        applied,
        batch: None,
        key,
    };
    if delivery.batch || delivered.messages.is_empty() {
        delivered.batch = Some(delivered.batch_answer());
    }
    Ok(delivered)
}

impl Delivered {
    /// `{"messages": [...], "statuses", "statuses_applied"}`.
    fn batch_answer(&self) -> Value {
        let stored = self
            .messages
            .iter()
            .map(|(_, w)| w.value().line(!w.is_new()));
        let mut messages: Vec<BatchLine> = stored.map(BatchLine::Stored).collect();
        messages.extend(self.rejected.iter().cloned().map(BatchLine::SetAside));
        let answer = BatchAnswer {
            messages,
            statuses: self.statuses,
            statuses_applied: self.applied,
        };
        serde_json::to_value(answer).expect("a batch's answer serialises")
    }
}

/// Characters of a set-aside message's JSON its review item keeps.
const RAW_MAX: usize = 16 * 1024;

/// A message of a batch that breaks a limit: a review item with what it said (its JSON as
/// posted), and its line in the answer.
async fn set_aside(
    store: &Store,
    integration: &Integration,
    incoming: &Incoming,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<MessageSetAside, StoreError> {
    // Keyed by the message's id, or its JSON when it named none.
    let named = match (incoming.provider_id.as_str(), &incoming.raw) {
        ("", Some(raw)) => raw.as_str(),
        (id, _) => id,
    };
    let digest = ExternalId::of_body(named.as_bytes());
    let text: String = incoming.text.chars().take(TEXT_MAX).collect();
    let cut = |s: &str| s.chars().take(300).collect::<String>();
    ReviewItem {
        org: integration.org().clone(),
        kind: Kind::Message,
        reason: Reason::UnparseableMessage,
        key: format!("{}:{digest}", integration.id.id),
        at: now,
        detail: json!({
            "integration_id": integration.id.id, "reason": reason,
            "message_id": cut(&incoming.provider_id),
            "chat_id": cut(&incoming.chat_id),
            "from": {"id": cut(&incoming.from.identity), "name": cut(&incoming.from.name)},
            "text": text,
            // The message as it was posted, for a person (at most 16 KiB of it).
            "raw": incoming.raw.as_deref().map(|r| r.chars().take(RAW_MAX).collect::<String>()),
        }),
    }
    .put(store)
    .await?;
    Ok(MessageSetAside {
        message_id: incoming.provider_id.clone(),
        status: "unparseable",
        review: "unparseable_message",
        detail: reason.to_owned(),
    })
}
