//! The reads behind the API: conversations and their messages.

use super::conversation::conversations_list;
use super::item::messages_list;
use super::{conversation_pk, Conversation, Message};
use crate::ids::OrgId;
use crate::store::{Store, StoreError};

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
    Ok(conversations_page(store, org, 200, None).await?.0)
}

/// A page of the organisation's conversations, the latest message first, and the next page's
/// cursor while more remain.
pub async fn conversations_page(
    store: &Store,
    org: &OrgId,
    limit: i32,
    cursor: Option<&str>,
) -> Result<(Vec<Conversation>, Option<String>), StoreError> {
    let list = conversations_list(org);
    store
        .newest_page(
            (crate::store::Index::Lists, &list),
            (limit, cursor),
            Conversation::from_item,
        )
        .await
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
    let listed = super::conversation::contact_conversations(org, contact_id);
    let pointers = store.list(&listed, true, 50).await?;
    store
        .named_by(&pointers, "conversation_id", |id| conversation_pk(org, id))
        .await?
        .iter()
        .map(Conversation::from_item)
        .collect()
}
