//! Messages: a customer's message from Telegram, WhatsApp Cloud or a generic sender, stored once
//! under (integration, provider message id) in its conversation, one per (integration, chat). An
//! unknown sender becomes one lead contact. Attachments are downloaded after the key was found
//! new and stored once in S3. Statuses of our own outgoing messages only move forward.
//!
//! One `BatchGetItem` (eventually consistent: every plan holds on it) reads the message's key,
//! its conversation and the sender's identity; a stored message is a duplicate answered from that
//! read alone. Otherwise the message is put under `attribute_not_exists`, in one transaction with
//! a new conversation and, for an unknown sender, the lead. A conversation that is there already
//! is moved forward (`last_message_at`, its place on the list) by the fan-out as it reads the
//! message (`conversation::moved_by`), so a message to a known conversation is one put.

pub mod conversation;
mod delivery;
mod files;
pub mod item;
pub mod media;
mod outgoing;
mod parse;
pub mod providers;
mod read;
mod record;
pub mod reply;

pub use conversation::Conversation;
pub use delivery::{deliver, BatchAnswer, Delivered, Delivery, MessageAnswer};
pub use item::{Attachment, Message};
pub use outgoing::{apply_status, caught_up, early_status, outgoing, record_outgoing, touch};
pub use parse::{standard, telegram, whatsapp, GenericMessage};
pub use read::{
    conversation, conversations, conversations_of, conversations_page, messages, MESSAGES_LISTED,
};
pub use record::{record, Placement, Recorded};

use crate::ids::{key_part, EventKey, OrgId};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The stored item's `kind`: one of the event kinds the stream hands to the fan-out.
pub const KIND: &str = "message";

/// The longest message text we store, in characters (Telegram's and WhatsApp's own limit).
pub const TEXT_MAX: usize = 4096;
/// At most this many attachments on one message.
pub const ATTACHMENTS_MAX: usize = 10;
/// At most this many messages and statuses in one delivery.
pub const BATCH_MAX: usize = 100;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Inbound,
    Outbound,
}

/// The status of one of our outgoing messages. It only moves forward: `sent` → `delivered` →
/// `read`; `failed` ends it.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum OutStatus {
    Sent,
    Delivered,
    Read,
    Failed,
}

impl OutStatus {
    /// The order statuses move in: a status is applied only over a lower rank.
    pub fn rank(self) -> u8 {
        match self {
            Self::Sent => 1,
            Self::Delivered => 2,
            Self::Read => 3,
            Self::Failed => 4,
        }
    }
}

/// Who wrote: the channel's own id for the person, a display name, and a phone where the channel
/// gives one (WhatsApp's `wa_id`, a generic sender's `phone`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sender {
    pub identity: String,
    pub name: String,
    pub phone: Option<String>,
}

/// Where an attachment's bytes are fetched from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MediaRef {
    /// Bot API `getFile`, then the file URL.
    TelegramFile(String),
    /// Graph API `GET /{media_id}` with the access token, then its `url`.
    WhatsappMedia(String),
    /// A generic sender's URL (https to a public host).
    Url(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttachmentRef {
    pub media: MediaRef,
    pub name: String,
    pub content_type: Option<String>,
    /// What the provider says the size is, when it says.
    pub size: Option<u64>,
}

/// One incoming message as the provider posted it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Incoming {
    /// Unique within the integration: Telegram `chat.id:message_id`, WhatsApp `wamid.…`, the
    /// generic `message_id`.
    pub provider_id: String,
    pub chat_id: String,
    pub from: Sender,
    pub text: String,
    pub attachments: Vec<AttachmentRef>,
    pub sent_at: Option<DateTime<Utc>>,
    /// WhatsApp: the business number (`phone_number_id`) the customer wrote to; replies go out
    /// through it.
    pub reply_via: Option<String>,
    /// What was changed to keep the message (a name cut to its limit, a time clamped): stored
    /// and listed with it.
    pub notes: Vec<String>,
    /// The message's JSON as posted, for a person when it cannot be kept (a batch's message).
    pub raw: Option<String>,
}

/// A status event of an outgoing message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusEvent {
    pub provider_id: String,
    pub status: OutStatus,
    pub at: Option<DateTime<Utc>>,
}

/// What a verified delivery says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Posted {
    Delivery {
        messages: Vec<Incoming>,
        statuses: Vec<StatusEvent>,
        /// Messages of a batch that could not be read (a WhatsApp message without its `from`),
        /// each as far as it was read, its JSON as posted in `raw`, and why: set aside for a
        /// person, the batch's others stored.
        unread: Vec<(Incoming, String)>,
        /// Answered in the batch form (WhatsApp always is).
        batch: bool,
    },
    Ignored(String),
}

/// The longest content type an attachment may name (the document's `maxLength`).
pub const CONTENT_TYPE_MAX: usize = 255;

impl Incoming {
    /// What the customer wrote, with the characters SQS refuses (control characters but tab and
    /// line breaks, U+FFFE, U+FFFF) shown as U+FFFD: a message is kept, never refused for them.
    pub fn printable(mut self) -> Self {
        use crate::fields::printable;
        self.text = printable(self.text);
        self.from.name = printable(self.from.name);
        for a in &mut self.attachments {
            a.name = printable(std::mem::take(&mut a.name));
        }
        self
    }

    /// A cosmetic field over its limit (the sender's name, an attachment's name) cut to it,
    /// an empty attachment name given one, each with a note: such a message is kept, not refused.
    pub fn cut_cosmetic(mut self) -> Self {
        use crate::fields::NAME_MAX;
        let cut = |field: &str, value: &mut String, notes: &mut Vec<String>| {
            let count = value.chars().count();
            if count > NAME_MAX {
                *value = value.chars().take(NAME_MAX).collect();
                notes.push(format!(
                    "{field}: cut to {NAME_MAX} of its {count} characters"
                ));
            }
        };
        cut("from.name", &mut self.from.name, &mut self.notes);
        for (i, a) in self.attachments.iter_mut().enumerate() {
            if a.name.trim().is_empty() {
                a.name = format!("attachment_{}", i + 1);
                self.notes.push(format!(
                    "attachments[{i}].name: none given, named {}",
                    a.name
                ));
            }
            cut(
                &format!("attachments[{i}].name"),
                &mut a.name,
                &mut self.notes,
            );
        }
        self
    }

    /// The time the message was sent, as told, held to [now − 7 days, now + 5 minutes] (a note
    /// says when it was clamped); now when none was told.
    pub fn sent_at_within(&self, now: DateTime<Utc>) -> (DateTime<Utc>, Option<String>) {
        let (earliest, latest) = (
            now - chrono::Duration::days(7),
            now + chrono::Duration::minutes(5),
        );
        let Some(told) = self.sent_at else {
            return (now, None);
        };
        let at = told.clamp(earliest, latest);
        let note = (at != told).then(|| {
            format!(
                "sent_at: {} is outside [now - 7 days, now + 5 minutes]; kept as {}",
                crate::time::format(told),
                crate::time::format(at)
            )
        });
        (at, note)
    }

    /// Every key and content field within its limit: a message that is not is kept raw for a
    /// person (cosmetic fields are cut first, `cut_cosmetic`).
    pub fn check(&self) -> Result<(), String> {
        use crate::fields::{reference, KEY_MAX, REF_MAX};
        reference("message_id", &self.provider_id, KEY_MAX).map_err(|e| e.to_string())?;
        reference("chat_id", &self.chat_id, REF_MAX).map_err(|e| e.to_string())?;
        reference("from.id", &self.from.identity, REF_MAX).map_err(|e| e.to_string())?;
        if self.text.chars().count() > TEXT_MAX {
            return Err(format!("text: must be at most {TEXT_MAX} characters"));
        }
        if self.attachments.len() > ATTACHMENTS_MAX {
            return Err(format!("attachments: at most {ATTACHMENTS_MAX}"));
        }
        for a in &self.attachments {
            if let MediaRef::Url(url) = &a.media {
                if url.len() > crate::fields::URL_MAX {
                    return Err("attachments.url: too long".into());
                }
            }
            let content_type = a.content_type.as_deref().unwrap_or_default();
            if content_type.len() > CONTENT_TYPE_MAX
                || content_type.chars().any(crate::fields::forbidden)
            {
                return Err(format!(
                    "attachments.content_type: at most {CONTENT_TYPE_MAX} bytes, no control characters"
                ));
            }
        }
        Ok(())
    }

    /// What the message says: the same key with other content is another message's report.
    pub fn fingerprint(&self) -> String {
        let mut canonical = format!("{}|{}|{}", self.chat_id, self.from.identity, self.text);
        for a in &self.attachments {
            canonical.push('|');
            canonical.push_str(&a.name);
        }
        hex::encode(Sha256::digest(canonical))[..32].to_owned()
    }
}

/// A message's key: `message:{integration}:{provider id}`.
pub fn message_key(integration_id: &str, provider_id: &str) -> EventKey {
    EventKey::new(KIND, &format!("{integration_id}:{provider_id}"))
}

pub(crate) fn message_pk(org: &OrgId, integration_id: &str, provider_id: &str) -> String {
    org.pk(&format!(
        "MESSAGE#{integration_id}#{}",
        key_part(provider_id)
    ))
}

/// A conversation's id is derived from (integration, chat): two first messages of one chat that
/// arrive together compute the same id, and one conditional put makes it.
pub fn conversation_id(org: &OrgId, integration_id: &str, chat_id: &str) -> String {
    let digest = hex::encode(Sha256::digest(format!("{org}|{integration_id}|{chat_id}")));
    format!("cv_{}", &digest[..20])
}

pub(crate) fn conversation_pk(org: &OrgId, id: &str) -> String {
    org.pk(&format!("CONVERSATION#{}", key_part(id)))
}
