//! The stored message and conversation: each mapped to and from its DynamoDB item here once, and
//! read by the fan-out through the same type.

use super::providers::MessageProvider;
use super::{message_key, message_pk, Direction, OutStatus, KIND};
use crate::consequences::{ActivityLine, Consequence, EntityKind, Fired, Notification, Trigger};
use crate::ids::{EventKey, OrgId};
use crate::store::item::{tag_name, Builder, Read};
use crate::store::lists::EventKind;
use crate::store::{Item, StoreError};
use crate::time;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::HashMap;

/// An attachment as stored: in S3 under `object`, or why it is not (`error`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attachment {
    pub name: String,
    pub content_type: String,
    pub size: u64,
    pub sha256: Option<String>,
    /// The S3 key; `None` when the file was not stored (too large, download failed).
    pub object: Option<String>,
    pub error: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    pub org: OrgId,
    pub integration_id: String,
    pub provider: MessageProvider,
    pub provider_id: String,
    pub conversation_id: String,
    pub chat_id: String,
    pub contact_id: String,
    /// The contact's owner when the message was stored: who is told of it (the team when none).
    pub owner: Option<String>,
    pub sender_name: String,
    pub direction: Direction,
    pub text: String,
    pub at: DateTime<Utc>,
    pub attachments: Vec<Attachment>,
    /// Outgoing messages only.
    pub status: Option<OutStatus>,
    pub fingerprint: String,
    /// What was changed to keep the message (a name cut, a time clamped).
    pub notes: Vec<String>,
}

/// A message in a conversation, as the API lists it (`Message`).
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Message)]
pub struct MessageView {
    #[schema(example = "message:i_0123456789abcdef:42:7")]
    pub key: String,
    /// The provider's id of the message.
    pub message_id: String,
    pub conversation_id: String,
    pub direction: Direction,
    pub text: String,
    #[schema(format = DateTime)]
    pub at: String,
    /// Outgoing messages: `sent`, `delivered`, `read` or `failed`; absent on incoming ones.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<OutStatus>,
    pub attachments: Vec<AttachmentView>,
    /// What was changed to keep the message (a name cut, a time clamped); absent when nothing.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A stored attachment: `url` reads it for 15 minutes; `error` says why a file is not stored.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Attachment)]
pub struct AttachmentView {
    pub name: String,
    pub content_type: String,
    pub size: u64,
    pub sha256: Option<String>,
    pub url: Option<String>,
    pub error: Option<String>,
}

fn malformed(item: &Item, detail: String) -> StoreError {
    StoreError::Malformed {
        pk: item.opt_str("pk").unwrap_or_default().to_owned(),
        detail,
    }
}

pub(super) fn org_of(item: &Item) -> Result<OrgId, StoreError> {
    OrgId::parse(item.str_of("org")?).map_err(|e| malformed(item, e.to_string()))
}

/// The first characters of a text, for a notification or an activity line.
/// The first 200 characters of a message, as one line of a notification or an activity line.
fn preview(text: &str) -> String {
    const SHOWN: usize = 200;
    let mut out: String = crate::fields::one_line(text).chars().take(SHOWN).collect();
    if text.chars().count() > SHOWN {
        out.push('…');
    }
    out
}

impl Message {
    pub fn key(&self) -> EventKey {
        message_key(&self.integration_id, &self.provider_id)
    }

    pub fn pk(&self) -> String {
        message_pk(&self.org, &self.integration_id, &self.provider_id)
    }

    pub fn to_item(&self) -> Item {
        let builder = Builder::new(&self.pk(), KIND, self.org.as_str());
        // Only what customers wrote is an event the operator counts; our replies are the
        // consequences of runs.
        let builder = match (self.direction, self.provider) {
            // An incoming SMS is counted once, as an SMS event.
            (Direction::Inbound, MessageProvider::Sms) => builder,
            (Direction::Inbound, _) => builder.on_events(
                &self.org,
                EventKind::Message,
                (self.at, self.key().as_str()),
            ),
            (Direction::Outbound, _) => builder,
        };
        builder
            .str("key", self.key().as_str())
            .str("integration_id", &self.integration_id)
            .tag("provider", &self.provider)
            .str("provider_id", &self.provider_id)
            .str("conversation_id", &self.conversation_id)
            .str("chat_id", &self.chat_id)
            .str("contact_id", &self.contact_id)
            .opt_str("owner", self.owner.clone())
            .str("sender_name", &self.sender_name)
            .tag("direction", &self.direction)
            .str("text", &self.text)
            .time("at", self.at)
            .str(
                "attachments",
                serde_json::to_string(&self.attachments).expect("attachments serialize"),
            )
            .opt_str("status", self.status.as_ref().map(tag_name))
            .opt_num("status_rank", self.status.map(OutStatus::rank))
            .str("fingerprint", &self.fingerprint)
            .opt_str(
                "notes",
                (!self.notes.is_empty())
                    .then(|| serde_json::to_string(&self.notes).expect("notes serialize")),
            )
            .list(
                &messages_list(&self.org, &self.conversation_id),
                &format!("{}#{}", time::format(self.at), self.key()),
            )
            .build()
    }

    pub fn from_item(item: &Item) -> Result<Self, StoreError> {
        let attachments = serde_json::from_str(item.str_of("attachments")?)
            .map_err(|e| malformed(item, format!("attachments: {e}")))?;
        Ok(Self {
            org: org_of(item)?,
            integration_id: item.str_of("integration_id")?.to_owned(),
            provider: item.tag_of("provider")?,
            provider_id: item.str_of("provider_id")?.to_owned(),
            conversation_id: item.str_of("conversation_id")?.to_owned(),
            chat_id: item.str_of("chat_id")?.to_owned(),
            contact_id: item.str_of("contact_id")?.to_owned(),
            owner: item.opt_str("owner").map(str::to_owned),
            sender_name: item.str_of("sender_name")?.to_owned(),
            direction: item.tag_of("direction")?,
            text: item.str_of("text")?.to_owned(),
            at: item.time_of("at")?,
            attachments,
            status: item
                .opt_str("status")
                .map(|_| item.tag_of("status"))
                .transpose()?,
            fingerprint: item.str_of("fingerprint")?.to_owned(),
            notes: item
                .opt_str("notes")
                .and_then(|n| serde_json::from_str(n).ok())
                .unwrap_or_default(),
        })
    }

    /// The message as the API lists it; `urls` maps a stored object to its presigned URL.
    pub fn view(&self, urls: &HashMap<String, String>) -> MessageView {
        MessageView {
            key: self.key().as_str().to_owned(),
            message_id: self.provider_id.clone(),
            conversation_id: self.conversation_id.clone(),
            direction: self.direction,
            text: self.text.clone(),
            at: time::format(self.at),
            status: self.status,
            attachments: self
                .attachments
                .iter()
                .map(|a| AttachmentView {
                    name: a.name.clone(),
                    content_type: a.content_type.clone(),
                    size: a.size,
                    sha256: a.sha256.clone(),
                    url: a.object.as_ref().and_then(|o| urls.get(o)).cloned(),
                    error: a.error.clone(),
                })
                .collect(),
            notes: self.notes.clone(),
        }
    }

    pub fn to_json(&self, urls: &HashMap<String, String>) -> Value {
        serde_json::to_value(self.view(urls)).expect("a message's view serialises")
    }

    /// An incoming message: a notification (the owner, or the team), an activity line on the
    /// contact keyed by the message key, and `message.received`. Our own outgoing message: its
    /// activity line only.
    pub fn consequences(&self) -> Vec<Consequence> {
        let attached = match self.attachments.len() {
            0 => String::new(),
            n => format!(" [{n} attachment{}]", if n == 1 { "" } else { "s" }),
        };
        let text = match self.direction {
            Direction::Inbound => format!(
                "Message from {}: {}{attached}",
                crate::fields::one_line(&self.sender_name),
                preview(&self.text)
            ),
            Direction::Outbound => format!("Reply sent: {}{attached}", preview(&self.text)),
        };
        let mut out = vec![ActivityLine {
            org: self.org.clone(),
            entity_kind: EntityKind::Contact,
            entity_id: self.contact_id.clone(),
            key: self.key().to_string(),
            kind: "message".into(),
            text: text.clone(),
            at: self.at,
            money: None,
        }
        .into()];
        if self.direction == Direction::Inbound {
            out.push(
                Notification {
                    org: self.org.clone(),
                    key: self.key(),
                    recipient: self.owner.clone(),
                    text,
                    at: self.at,
                }
                .into(),
            );
            out.push(
                Fired {
                    org: self.org.clone(),
                    trigger: Trigger::MessageReceived,
                    event_key: self.key(),
                    at: self.at,
                    context: json!({
                        "conversation_id": self.conversation_id,
                        "integration_id": self.integration_id,
                        "provider": self.provider,
                        "chat_id": self.chat_id,
                        "contact_id": self.contact_id,
                        "sender_name": self.sender_name,
                        "message_id": self.provider_id,
                        "text": preview(&self.text),
                    }),
                }
                .into(),
            );
        }
        out
    }
}

pub(crate) fn messages_list(org: &OrgId, conversation_id: &str) -> String {
    org.pk(&format!("MESSAGES#{conversation_id}"))
}
