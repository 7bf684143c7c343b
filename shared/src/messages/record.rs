//! Recording a message once, applying a status, and the reads behind the API.

use super::media::Media;
use super::providers::MessageProvider;
use super::{
    conversation_id, conversation_pk, message_pk, Attachment, Conversation, Direction, Incoming,
    Message,
};
use crate::contacts::{self, Identity};
use crate::integrations::Integration;
use crate::review::{Kind, Reason, ReviewItem};
use crate::store::item::Read;
use crate::store::{Decision, Item, Mismatch, Plan, Seen, Step, Store, StoreError, Written};
use crate::time;
use chrono::{DateTime, Utc};
use serde_json::json;

/// How recording one message ended: stored now, or the message stored under its key.
pub type Recorded = Written<Message>;

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

/// The keys a first message's steps depend on: the message, its conversation and its sender's
/// identity, read in one `BatchGetItem` (by `record`, or by a caller that adds its own keys).
pub struct Placement {
    pub message_pk: String,
    pub conversation_pk: String,
    pub identity_pk: String,
    identity: Identity,
    conversation_id: String,
}

impl Placement {
    pub fn of(integration: &Integration, incoming: &Incoming) -> Self {
        let org = integration.org();
        let integration_id = &integration.id.id;
        let identity = identity(integration, incoming);
        let conversation_id = conversation_id(org, integration_id, &incoming.chat_id);
        Self {
            message_pk: message_pk(org, integration_id, &incoming.provider_id),
            conversation_pk: conversation_pk(org, &conversation_id),
            identity_pk: contacts::identity_pk(org, &identity),
            identity,
            conversation_id,
        }
    }

    /// The message as first stored, and the steps that store it (the message first, so a
    /// refusal of the first step is a duplicate; marked to move a conversation that is there,
    /// `conversation::MOVES_CONVERSATION`), a new conversation and, for an unknown sender, the
    /// lead. `conversation` and `known` are what the read found.
    #[allow(clippy::too_many_arguments)]
    pub fn steps(
        &self,
        integration: &Integration,
        provider: MessageProvider,
        incoming: &Incoming,
        conversation: Option<Item>,
        known: Option<Item>,
        attachments: Vec<Attachment>,
        now: DateTime<Utc>,
    ) -> Result<(Message, Vec<Step>), StoreError> {
        let org = integration.org();
        let (at, clamped) = incoming.sent_at_within(now);
        let notes = incoming.notes.iter().cloned().chain(clamped).collect();
        let (known, lead) = match known {
            Some(item) => (contacts::known(&item)?, Vec::new()),
            None => contacts::lead_steps(org, &self.identity, &incoming.from.name, now),
        };
        let message = Message {
            org: org.clone(),
            integration_id: integration.id.id.clone(),
            provider,
            provider_id: incoming.provider_id.clone(),
            conversation_id: self.conversation_id.clone(),
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
            notes,
        };
        let (conv_steps, moves) = match conversation {
            // The fan-out moves it forward as it reads the message (`conversation::moved_by`).
            Some(item) => (vec![], moves_forward(&item, at)?),
            None => (self.new_conversation(&message, incoming, now), false),
        };
        let mut item = message.to_item();
        if moves {
            item.insert(
                super::conversation::MOVES_CONVERSATION.into(),
                aws_sdk_dynamodb::types::AttributeValue::Bool(true),
            );
            // The business number it reached: a reply leaves from the one the customer wrote
            // to last (one WhatsApp app may serve several numbers at one URL).
            if let Some(via) = &incoming.reply_via {
                item.insert(
                    super::conversation::REPLY_VIA.into(),
                    crate::store::item::s(via),
                );
            }
        }
        let mut steps = vec![Step::PutNew(item)];
        steps.extend(conv_steps);
        steps.extend(lead);
        Ok((message, steps))
    }
}

/// Stores a message once. Its attachments are fetched after its key was found new and before
/// it is written (once, however often the write is retried); a copy with the same key and other
/// content keeps the first and is a conflict for the edge to file.
pub async fn record(
    store: &Store,
    media: &Media,
    integration: &Integration,
    incoming: &Incoming,
    now: DateTime<Utc>,
    deadline: std::time::Instant,
) -> Result<Recorded, StoreError> {
    let provider =
        integration
            .settings
            .message_provider()
            .ok_or_else(|| StoreError::Malformed {
                pk: integration.pk(),
                detail: "not a messages integration".into(),
            })?;
    let mut decision = RecordMessage {
        place: Placement::of(integration, incoming),
        media,
        integration,
        provider,
        incoming,
        deadline,
        attachments: None,
    };
    // Contention retries stay inside the delivery's time: its downloads' deadline and a little.
    let until = deadline + std::time::Duration::from_secs(5);
    store.write_until(&mut decision, now, until).await
}

struct RecordMessage<'a> {
    place: Placement,
    media: &'a Media,
    integration: &'a Integration,
    provider: MessageProvider,
    incoming: &'a Incoming,
    deadline: std::time::Instant,
    /// Fetched once, when the key is first found new.
    attachments: Option<Vec<Attachment>>,
}

impl Decision for RecordMessage<'_> {
    type Out = Message;
    type Error = StoreError;

    fn keys(&self) -> Vec<String> {
        let p = &self.place;
        vec![
            p.message_pk.clone(),
            p.conversation_pk.clone(),
            p.identity_pk.clone(),
        ]
    }

    /// Not with attachments: a twin stored in the last second, read stale, would fetch them
    /// again.
    fn reads_stale_first(&self) -> bool {
        self.incoming.attachments.is_empty()
    }

    /// Every plan holds on a stale read: a stored message never changes; a conversation or an
    /// identity read absent is put under `attribute_not_exists`; one read present is there (the
    /// fan-out's move of it is held to its time). A twin stored in the last second and read
    /// absent has its put refused and is answered as a repeat.
    fn stale_holds(&self, _plan: &Plan<Message>) -> bool {
        true
    }

    async fn prepare(&mut self, seen: &Seen) -> Result<(), StoreError> {
        if seen.stored().is_none() && self.attachments.is_none() {
            let fetched = self
                .media
                .fetch_all(
                    self.integration,
                    &self.place.message_pk,
                    &self.incoming.attachments,
                    self.deadline,
                )
                .await;
            self.attachments = Some(fetched);
        }
        Ok(())
    }

    fn decide(&self, seen: &Seen, now: DateTime<Utc>) -> Result<Plan<Message>, StoreError> {
        let incoming = self.incoming;
        if let Some(item) = seen.stored() {
            let stored = Message::from_item(item)?;
            let names = |m: &[Attachment]| m.iter().map(|a| a.name.clone()).collect::<Vec<_>>();
            let sent: Vec<String> = incoming
                .attachments
                .iter()
                .map(|a| a.name.clone())
                .collect();
            let mismatch = Mismatch::of(
                &stored.fingerprint,
                &incoming.fingerprint(),
                &[
                    ("chat_id", stored.chat_id != incoming.chat_id),
                    ("text", stored.text != incoming.text),
                    ("attachments", names(&stored.attachments) != sent),
                ],
            );
            return Ok(Plan::Done(Written::again(stored, mismatch)));
        }
        let (message, mut steps) = self.place.steps(
            self.integration,
            self.provider,
            incoming,
            seen.get(1).cloned(),
            seen.get(2).cloned(),
            self.attachments.clone().unwrap_or_default(),
            now,
        )?;
        // The message, its conversation, the lead, and the review items of attachments not
        // stored: all or nothing.
        steps.extend(attachment_reviews(&message, now).map(|r| Step::PutNew(r.to_item())));
        Ok(Plan::Write {
            steps,
            out: message,
        })
    }
}

impl Placement {
    /// The steps that put the conversation `message` opens, and its place on its contact's list.
    fn new_conversation(
        &self,
        message: &Message,
        incoming: &Incoming,
        now: DateTime<Utc>,
    ) -> Vec<Step> {
        let conversation = Conversation {
            org: message.org.clone(),
            id: self.conversation_id.clone(),
            integration_id: message.integration_id.clone(),
            provider: message.provider,
            chat_id: incoming.chat_id.clone(),
            contact_id: message.contact_id.clone(),
            reply_via: incoming.reply_via.clone(),
            created_at: now,
            last_message_at: message.at,
        };
        vec![
            Step::PutNew(conversation.to_item()),
            Step::PutNew(conversation.of_contact_item()),
        ]
    }
}

/// Whether a message at `at` moves the stored conversation `item` forward: not when a later
/// message is there already (as read; the fan-out's update is held to it anyway).
fn moves_forward(item: &Item, at: DateTime<Utc>) -> Result<bool, StoreError> {
    let last = item.str_of("last_message_at")?;
    Ok(time::parse(last).is_none_or(|last| last < at))
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
            kind: Kind::Message,
            reason: if error.starts_with("too large") {
                Reason::AttachmentTooLarge
            } else {
                Reason::AttachmentFailed
            },
            key: format!("{}:{index}", message.key()),
            at: now,
            detail: json!({"conversation_id": message.conversation_id, "name": a.name, "error": error}),
        })
    })
}
