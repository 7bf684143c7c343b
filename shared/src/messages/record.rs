//! Recording a message once, applying a status, and the reads behind the API.

use super::conversation::conversation_position;
use super::media::Media;
use super::{
    conversation_id, conversation_pk, message_pk, Attachment, Conversation, Direction, Incoming,
    Message,
};
use crate::contacts::{self, Identity};
use crate::integrations::Integration;
use crate::review::ReviewItem;
use crate::store::item::{s, Read};
use crate::store::{Cond, Item, Step, Store, StoreError, Transacted, Update};
use crate::time;
use chrono::{DateTime, Utc};
use serde_json::json;

/// How recording one message ended.
#[derive(Clone, Debug)]
pub enum Recorded {
    New(Message),
    /// The key was stored before; `same_payload` says whether this copy says the same.
    Duplicate {
        stored: Message,
        same_payload: bool,
    },
}

impl Recorded {
    pub fn message(&self) -> &Message {
        match self {
            Self::New(m) | Self::Duplicate { stored: m, .. } => m,
        }
    }

    pub fn is_new(&self) -> bool {
        matches!(self, Self::New(_))
    }
}

/// Attempts before giving up on contention (a lead or conversation made concurrently is read on
/// the next one).
const ATTEMPTS: u32 = 8;

/// The sender's identity: WhatsApp's `wa_id` and a generic sender's phone are phone numbers (so
/// a caller and a writer are one contact); a Telegram user id, or a generic sender's own id
/// within its integration, otherwise.
fn identity(integration: &Integration, incoming: &Incoming) -> Identity {
    let phone = incoming
        .from
        .phone
        .as_deref()
        .and_then(|p| contacts::e164("phone", p).ok());
    match (phone, integration.settings.message_provider()) {
        (Some(phone), _) => Identity::phone(&phone),
        (None, Some(super::providers::MessageProvider::Telegram)) => Identity {
            channel: "telegram",
            id: incoming.from.identity.clone(),
        },
        (None, _) => Identity {
            channel: "chat",
            id: format!("{}:{}", integration.id.id, incoming.from.identity),
        },
    }
}

/// Stores a message once. Its attachments are fetched after its key was found new and before
/// it is written; a copy with the same key and other content keeps the first and files a
/// `payload_mismatch` review item.
pub async fn record(
    store: &Store,
    media: &Media,
    integration: &Integration,
    incoming: &Incoming,
    now: DateTime<Utc>,
    deadline: std::time::Instant,
) -> Result<Recorded, StoreError> {
    let org = integration.org();
    let integration_id = &integration.id.id;
    let provider =
        integration
            .settings
            .message_provider()
            .ok_or_else(|| StoreError::Malformed {
                pk: integration.pk(),
                detail: "not a messages integration".into(),
            })?;
    let pk = message_pk(org, integration_id, &incoming.provider_id);
    let conv_id = conversation_id(org, integration_id, &incoming.chat_id);
    let conv_pk = conversation_pk(org, &conv_id);
    let identity = identity(integration, incoming);
    let identity_pk = contacts::identity_pk(org, &identity);
    let at = incoming.sent_at.unwrap_or(now);
    let mut attachments: Option<Vec<Attachment>> = None;
    for attempt in 0..ATTEMPTS {
        let mut found = store
            .get_many(&[pk.clone(), conv_pk.clone(), identity_pk.clone()])
            .await?
            .into_iter();
        let (stored, conv, known) = (
            found.next().flatten(),
            found.next().flatten(),
            found.next().flatten(),
        );
        if let Some(item) = stored {
            return duplicate(store, incoming, &item, now).await;
        }
        let attachments = match &attachments {
            Some(done) => done.clone(),
            None => attachments
                .insert(
                    media
                        .fetch_all(integration, &pk, &incoming.attachments, deadline)
                        .await,
                )
                .clone(),
        };
        let (known, mut steps) = match known {
            Some(item) => (contacts::known(&item)?, Vec::new()),
            None => contacts::lead_steps(org, &identity, &incoming.from.name, now),
        };
        let message = Message {
            org: org.clone(),
            integration_id: integration_id.clone(),
            provider,
            provider_id: incoming.provider_id.clone(),
            conversation_id: conv_id.clone(),
            chat_id: incoming.chat_id.clone(),
            contact_id: known.contact_id.clone(),
            owner: known.owner.clone(),
            sender_name: incoming.from.name.clone(),
            direction: Direction::Inbound,
            text: incoming.text.clone(),
            at,
            attachments,
            status: None,
            fingerprint: incoming.fingerprint(),
        };
        let conv_steps = match conv {
            Some(item) => vec![moved_forward(&item, at)?],
            None => {
                let conversation = Conversation {
                    org: org.clone(),
                    id: conv_id.clone(),
                    integration_id: integration_id.clone(),
                    provider,
                    chat_id: incoming.chat_id.clone(),
                    contact_id: known.contact_id.clone(),
                    reply_via: incoming.reply_via.clone(),
                    created_at: now,
                    last_message_at: at,
                };
                vec![
                    Step::PutNew(conversation.to_item()),
                    Step::PutNew(conversation.of_contact_item()),
                ]
            }
        };
        // The message first (a refusal of step 0 is a duplicate), then its conversation, the
        // lead, and the review items of attachments not stored: all or nothing.
        steps.splice(
            0..0,
            [Step::PutNew(message.to_item())]
                .into_iter()
                .chain(conv_steps),
        );
        steps.extend(attachment_reviews(&message, now).map(|r| Step::PutNew(r.to_item())));
        match store.transact(steps).await? {
            Transacted::Done => return Ok(Recorded::New(message)),
            Transacted::Refused {
                step: 0,
                existing: Some(item),
            } => return duplicate(store, incoming, &item, now).await,
            // A conversation or lead made by a concurrent arrival, or contention: read again.
            _ => tokio::time::sleep(crate::payments::register::backoff(attempt)).await,
        }
    }
    Err(StoreError::Contended { pk })
}

/// The conversation step for a message at `at`: move `last_message_at` forward (only over an
/// earlier one, so a concurrent later message is never undone), or only require the
/// conversation when a later message is already there. A refusal re-reads, and the next round
/// is the existence check.
fn moved_forward(item: &Item, at: DateTime<Utc>) -> Result<Step, StoreError> {
    let pk = item.str_of("pk")?.to_owned();
    let last = item.str_of("last_message_at")?;
    if time::parse(last).is_some_and(|last| last >= at) {
        return Ok(Step::Present(pk));
    }
    Ok(Step::Update {
        pk,
        update: forward(item.str_of("id")?, at),
    })
}

/// `last_message_at` (and the list position) moved to `at`, only over an earlier time.
pub(super) fn forward(conversation_id: &str, at: DateTime<Utc>) -> Update {
    Update::new()
        .set("last_message_at", s(time::format(at)))
        .set("gsi1sk", s(conversation_position(at, conversation_id)))
        .when(Cond::AbsentOrBefore(
            "last_message_at".into(),
            s(time::format(at)),
        ))
}

/// An attachment that could not be stored is on the message with its reason, and a person is
/// told once per attachment, in the transaction that stores the message.
fn attachment_reviews(
    message: &Message,
    now: DateTime<Utc>,
) -> impl Iterator<Item = ReviewItem> + '_ {
    message.attachments.iter().enumerate().filter_map(move |(index, a)| {
        let error = a.error.as_ref()?;
        Some(ReviewItem {
            org: message.org.clone(),
            kind: "message".into(),
            reason: if error.starts_with("too large") {
                "attachment_too_large"
            } else {
                "attachment_failed"
            }
            .into(),
            key: format!("{}:{index}", message.key()),
            at: now,
            detail: json!({"conversation_id": message.conversation_id, "name": a.name, "error": error}),
        })
    })
}

async fn duplicate(
    store: &Store,
    incoming: &Incoming,
    item: &Item,
    now: DateTime<Utc>,
) -> Result<Recorded, StoreError> {
    let stored = Message::from_item(item)?;
    let fingerprint = incoming.fingerprint();
    let same_payload = stored.fingerprint == fingerprint;
    if !same_payload {
        ReviewItem {
            org: stored.org.clone(),
            kind: "message".into(),
            reason: "payload_mismatch".into(),
            key: format!("{}:{}", stored.key(), &fingerprint[..16]),
            at: now,
            detail: json!({"conversation_id": stored.conversation_id, "stored_text": stored.text, "received_text": incoming.text}),
        }
        .put(store)
        .await?;
    }
    Ok(Recorded::Duplicate {
        stored,
        same_payload,
    })
}
