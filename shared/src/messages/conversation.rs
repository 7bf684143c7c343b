//! One conversation per (integration, chat), mapped to and from its item here once.

use super::conversation_pk;
use super::item::org_of;
use super::providers::MessageProvider;
use crate::ids::OrgId;
use crate::store::item::{s, Builder, Read};
use crate::store::{Cond, Item, StoreError, Update};
use crate::time;
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

/// One conversation per (integration, chat).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conversation {
    pub org: OrgId,
    pub id: String,
    pub integration_id: String,
    pub provider: MessageProvider,
    pub chat_id: String,
    pub contact_id: String,
    /// WhatsApp: the business number the customer wrote to, which replies go out through.
    pub reply_via: Option<String>,
    pub created_at: DateTime<Utc>,
    pub last_message_at: DateTime<Utc>,
}

/// The list of a contact's conversations.
pub(crate) fn contact_conversations(org: &OrgId, contact_id: &str) -> String {
    org.pk(&format!(
        "CONVERSATIONS_OF#{}",
        crate::ids::key_part(contact_id)
    ))
}

pub(crate) fn conversations_list(org: &OrgId) -> String {
    org.pk("CONVERSATIONS")
}

/// On a message stored into a conversation that was there already: the fan-out moves the
/// conversation forward to it (`moved_by`). A message that made its conversation has it at its
/// own time already.
pub const MOVES_CONVERSATION: &str = "moves_conversation";

/// The update that moves the conversation of the stored message `item` forward to it, when it
/// carries [`MOVES_CONVERSATION`]: only over an earlier time, so it may come twice and a later
/// message is never undone (a refusal is that).
pub fn moved_by(item: &Item) -> Option<(String, Update)> {
    if item.get(MOVES_CONVERSATION).and_then(|v| v.as_bool().ok()) != Some(&true) {
        return None;
    }
    let org = OrgId::parse(item.opt_str("org")?).ok()?;
    let id = item.opt_str("conversation_id")?;
    let at = time::parse(item.opt_str("at")?)?;
    let mut update = forward(id, at);
    if let Some(via) = item.opt_str(REPLY_VIA) {
        update = update.set(REPLY_VIA, s(via));
    }
    Some((conversation_pk(&org, id), update))
}

/// The business number a conversation's replies leave from (WhatsApp's `phone_number_id`): the
/// one its latest message reached.
pub const REPLY_VIA: &str = "reply_via";

/// The list position: newest message first.
pub(crate) fn conversation_position(last_message_at: DateTime<Utc>, id: &str) -> String {
    format!("{}#{id}", time::format(last_message_at))
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

impl Conversation {
    pub fn pk(&self) -> String {
        conversation_pk(&self.org, &self.id)
    }

    pub fn to_item(&self) -> Item {
        Builder::new(&self.pk(), "conversation", self.org.as_str())
            .str("id", &self.id)
            .str("integration_id", &self.integration_id)
            .tag("provider", &self.provider)
            .str("chat_id", &self.chat_id)
            .str("contact_id", &self.contact_id)
            .opt_str(REPLY_VIA, self.reply_via.clone())
            .time("created_at", self.created_at)
            .time("last_message_at", self.last_message_at)
            .list(
                &conversations_list(&self.org),
                &conversation_position(self.last_message_at, &self.id),
            )
            .build()
    }

    /// The item that lists this conversation under its contact (made with it, once).
    pub fn of_contact_item(&self) -> Item {
        let pk = self.org.pk(&format!(
            "CONVERSATION_OF#{}#{}",
            crate::ids::key_part(&self.contact_id),
            self.id
        ));
        Builder::new(&pk, "contact_conversation", self.org.as_str())
            .str("conversation_id", &self.id)
            .str("contact_id", &self.contact_id)
            .tag("provider", &self.provider)
            .list(
                &contact_conversations(&self.org, &self.contact_id),
                &format!("{}#{}", time::format(self.created_at), self.id),
            )
            .build()
    }

    pub fn from_item(item: &Item) -> Result<Self, StoreError> {
        Ok(Self {
            org: org_of(item)?,
            id: item.str_of("id")?.to_owned(),
            integration_id: item.str_of("integration_id")?.to_owned(),
            provider: item.tag_of("provider")?,
            chat_id: item.str_of("chat_id")?.to_owned(),
            contact_id: item.str_of("contact_id")?.to_owned(),
            reply_via: item.opt_str(REPLY_VIA).map(str::to_owned),
            created_at: item.time_of("created_at")?,
            last_message_at: item.time_of("last_message_at")?,
        })
    }

    /// The conversation as the API shows it.
    pub fn view(&self) -> ConversationView {
        ConversationView {
            id: self.id.clone(),
            integration_id: self.integration_id.clone(),
            provider: self.provider,
            chat_id: self.chat_id.clone(),
            contact_id: self.contact_id.clone(),
            created_at: time::format(self.created_at),
            last_message_at: time::format(self.last_message_at),
        }
    }

    pub fn to_json(&self) -> Value {
        serde_json::to_value(self.view()).expect("a conversation's view serialises")
    }
}

/// One conversation per (integration, chat), as the API shows it (`Conversation`).
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Conversation)]
pub struct ConversationView {
    #[schema(example = "cv_0123456789abcdef0123")]
    pub id: String,
    pub integration_id: String,
    pub provider: MessageProvider,
    /// Telegram's `chat.id`, WhatsApp's customer `wa_id`, the generic `chat_id`.
    pub chat_id: String,
    pub contact_id: String,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub last_message_at: String,
}
