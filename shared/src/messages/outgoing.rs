//! Our own outgoing messages: a reply stored once, and the statuses WhatsApp reports for it,
//! which only move forward.

use super::conversation::forward;
use super::{message_pk, Conversation, Direction, Message, OutStatus, StatusEvent};
use crate::ids::OrgId;
use crate::store::item::{n, s, tag_name, Read};
use crate::store::{Cond, Step, Store, StoreError, Transacted, Update};
use crate::time;
use chrono::{DateTime, Utc};

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
        // Its message is a send of ours in flight: stored within seconds, or never.
        .set(
            "expires_at",
            n((now + crate::store::EARLY_STATUS_KEPT).timestamp()),
        )
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
        // The message was stored since it was not found: the status is its own now.
        Transacted::Refused { step: 0, .. } => store.update_if(&pk, &on_message).await,
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

/// A stored reply brought up to a status that came after its early status was read and before
/// it was stored (that status waits on its own item; every later one finds the message): read
/// once more and applied, only over a lower status. `Ok(true)` when it moved the message.
pub async fn caught_up(
    store: &Store,
    conversation: &Conversation,
    provider_id: &str,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let Some(status) = early_status(store, conversation, provider_id).await? else {
        return Ok(false);
    };
    let event = StatusEvent {
        provider_id: provider_id.to_owned(),
        status,
        at: None,
    };
    let (org, integration) = (&conversation.org, conversation.integration_id.as_str());
    apply_status(store, org, integration, &event, now).await
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
        notes: Vec::new(),
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
