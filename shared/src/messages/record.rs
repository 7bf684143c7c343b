//! Recording a message once, applying a status, and the reads behind the API.

use super::item::{conversation_position, conversations_list, messages_list};
use super::media::Media;
use super::{
    conversation_id, conversation_pk, message_pk, Attachment, Conversation, Direction, Incoming,
    Message, OutStatus, StatusEvent,
};
use crate::contacts::{self, Identity};
use crate::ids::OrgId;
use crate::integrations::Integration;
use crate::review::ReviewItem;
use crate::store::item::{n, s, tag_name, Read};
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
fn forward(conversation_id: &str, at: DateTime<Utc>) -> Update {
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

/// Applies a status event of one of our outgoing messages: only over a lower status, so a late
/// `delivered` after `read` changes nothing and a repeated event is a no-op. `Ok(false)` when it
/// changed no message. A status that finds no outgoing message of ours (it came before the
/// reply was stored, or the message was sent from elsewhere) is kept on its own item, the
/// highest only, and a reply stored later starts from it.
pub async fn apply_status(
    store: &Store,
    org: &OrgId,
    integration_id: &str,
    event: &StatusEvent,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let rank = event.status.rank();
    let set = |update: Update| {
        update
            .set("status", s(tag_name(&event.status)))
            .set("status_rank", n(rank))
            .set("status_at", s(time::format(event.at.unwrap_or(now))))
    };
    let pk = message_pk(org, integration_id, &event.provider_id);
    let on_message = set(Update::new()).when(Cond::All(vec![
        Cond::Equals("direction".into(), s(tag_name(&Direction::Outbound))),
        Cond::AbsentOrBefore("status_rank".into(), n(rank)),
    ]));
    if store.update_if(&pk, &on_message).await? {
        return Ok(true);
    }
    // Only when the message is not there (a stored one kept its higher status), and only over
    // a lower early status: both refusals are "nothing to do".
    let early = set(Update::new())
        .set("kind", s("early_status"))
        .set("org", s(org.as_str()))
        .when(Cond::Any(vec![
            Cond::Missing,
            Cond::Before("status_rank".into(), n(rank)),
        ]));
    let steps = vec![
        Step::Absent(pk.clone()),
        Step::Update {
            pk: early_status_pk(&pk),
            update: early,
        },
    ];
    match store.transact(steps).await? {
        Transacted::Done | Transacted::Refused { .. } => Ok(false),
        Transacted::Contended => Err(StoreError::Contended { pk }),
    }
}

fn early_status_pk(message_pk: &str) -> String {
    format!("{message_pk}#STATUS")
}

/// The highest status that arrived for an outgoing message before it was stored.
pub async fn early_status(
    store: &Store,
    conversation: &Conversation,
    provider_id: &str,
) -> Result<Option<OutStatus>, StoreError> {
    let pk = message_pk(&conversation.org, &conversation.integration_id, provider_id);
    store
        .get(&early_status_pk(&pk))
        .await?
        .map(|item| item.tag_of("status"))
        .transpose()
}

/// A reply we sent, as the message it is stored as (`status` the highest that came before it,
/// else `sent`).
pub fn outgoing(
    conversation: &Conversation,
    provider_id: &str,
    text: &str,
    status: Option<OutStatus>,
    now: DateTime<Utc>,
) -> Message {
    Message {
        org: conversation.org.clone(),
        integration_id: conversation.integration_id.clone(),
        provider: conversation.provider,
        provider_id: provider_id.to_owned(),
        conversation_id: conversation.id.clone(),
        chat_id: conversation.chat_id.clone(),
        contact_id: conversation.contact_id.clone(),
        owner: None,
        sender_name: "automation".into(),
        direction: Direction::Outbound,
        text: text.to_owned(),
        at: now,
        attachments: Vec::new(),
        status: Some(status.unwrap_or(OutStatus::Sent).max(OutStatus::Sent)),
        fingerprint: String::new(),
    }
}

/// Stores a reply we sent, once: `Ok(false)` when it was stored before.
pub async fn record_outgoing(store: &Store, message: &Message) -> Result<bool, StoreError> {
    Ok(store.put_new(message.to_item()).await?.created())
}

/// Moves a conversation's `last_message_at` forward to `at` (a reply sent); `Ok(false)` when a
/// later message is there already.
pub async fn touch(
    store: &Store,
    conversation: &Conversation,
    at: DateTime<Utc>,
) -> Result<bool, StoreError> {
    store
        .update_if(&conversation.pk(), &forward(&conversation.id, at))
        .await
}

/// One conversation by id.
pub async fn conversation(
    store: &Store,
    org: &OrgId,
    id: &str,
) -> Result<Option<Conversation>, StoreError> {
    store
        .get(&conversation_pk(org, id))
        .await?
        .map(|item| Conversation::from_item(&item))
        .transpose()
}

/// The organisation's conversations, the latest message first.
pub async fn conversations(store: &Store, org: &OrgId) -> Result<Vec<Conversation>, StoreError> {
    store
        .list(&conversations_list(org), true, 200)
        .await?
        .iter()
        .map(Conversation::from_item)
        .collect()
}

/// The latest `MESSAGES_LISTED` messages of a conversation, in time order.
pub async fn messages(
    store: &Store,
    org: &OrgId,
    conversation_id: &str,
) -> Result<Vec<Message>, StoreError> {
    let mut newest_first = store
        .list(&messages_list(org, conversation_id), true, MESSAGES_LISTED)
        .await?
        .iter()
        .map(Message::from_item)
        .collect::<Result<Vec<_>, _>>()?;
    newest_first.reverse();
    Ok(newest_first)
}

/// How many messages of a conversation the API lists: the latest.
pub const MESSAGES_LISTED: i32 = 500;

/// A contact's conversations, the newest first: found through the contact, whatever the size
/// of the organisation's list.
pub async fn conversations_of(
    store: &Store,
    org: &OrgId,
    contact_id: &str,
) -> Result<Vec<Conversation>, StoreError> {
    let ids: Vec<String> = store
        .list(
            &super::item::contact_conversations(org, contact_id),
            true,
            50,
        )
        .await?
        .iter()
        .map(|item| {
            item.str_of("conversation_id")
                .map(|id| conversation_pk(org, id))
        })
        .collect::<Result<_, _>>()?;
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    store
        .get_many(&ids)
        .await?
        .into_iter()
        .flatten()
        .map(|item| Conversation::from_item(&item))
        .collect()
}
