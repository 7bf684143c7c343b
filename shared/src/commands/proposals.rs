//! What a model proposes, as a person is shown it: its cause (the message that led to it, its
//! sender, whether the invoice is the sender's), and at most [`OPEN_MAX`] open proposals in one
//! conversation, so a model that keeps asking is heard a few times and a person is not flooded.

use super::Refused;
use crate::ids::OrgId;
use crate::payments::Invoice;
use crate::review::{review_item_pk, Reason, ReviewItem};
use crate::store::item::Read;
use crate::store::{Cond, Step, Store, Update};
use aws_sdk_dynamodb::types::AttributeValue;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Open `payment_proposed` items one conversation holds at most.
pub const OPEN_MAX: usize = 3;

/// How much of the message a proposal shows.
const TEXT_SHOWN: usize = 500;

/// The set of the open proposals' review keys of a conversation.
const OPEN: &str = "open";

fn open_pk(org: &OrgId, conversation_id: &str) -> String {
    org.pk(&format!("PROPOSALS#{conversation_id}"))
}

/// What a model proposes, as its `payment_proposed` review item holds it (`detail`) and a
/// person's approval reads it back: one type both ways, so the two cannot drift.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Proposal {
    pub invoice_id: String,
    #[serde(default)]
    pub invoice_number: String,
    /// What would be booked, in the invoice's currency's digits.
    pub amount: String,
    #[serde(default)]
    pub currency: String,
    #[serde(default)]
    pub rule_id: String,
    #[serde(default)]
    pub event_key: String,
    /// The model's tool call's id.
    #[serde(default)]
    pub call: String,
    /// What the invoice owed when it was proposed.
    #[serde(default)]
    pub open_now: String,
    #[serde(default)]
    pub trigger: Cause,
}

impl Proposal {
    /// The proposal a review item holds; a detail that is not one is a malformed item.
    pub fn of(item: &crate::store::Item, detail: &Value) -> Result<Self, Refused> {
        serde_json::from_value(detail.clone())
            .map_err(|e| crate::store::item::malformed(item, &format!("detail: {e}")).into())
    }
}

/// What led to a proposal, as a person is shown it beside it: data, never a say in what the
/// model may do.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Cause {
    pub event_key: String,
    pub conversation_id: Option<String>,
    pub sender: Sender,
    /// The message's first 500 characters.
    pub text: Option<String>,
    pub invoice_contact_id: Option<String>,
    pub sender_is_invoice_contact: bool,
}

/// Who sent the message that led to a proposal.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Sender {
    pub contact_id: Option<String>,
    pub name: Option<String>,
}

/// The proposal's cause from its trigger's context: the event, the conversation, the sender
/// (a contact and a name), the message's first 500 characters (read from the stored message),
/// and whether the invoice is the sender's. A trigger without a message (an invoice paid) has
/// the event alone.
pub async fn cause(
    store: &Store,
    org: &OrgId,
    (event_key, context): (&str, &Value),
    invoice: &Invoice,
) -> Result<Cause, Refused> {
    let text_of = |name: &str| context.get(name).and_then(Value::as_str);
    let (conversation, sender) = (text_of("conversation_id"), text_of("contact_id"));
    let mut text = text_of("text").map(str::to_owned);
    if let (Some(integration), Some(message)) = (text_of("integration_id"), text_of("message_id")) {
        let pk = crate::messages::message_pk(org, integration, message);
        if let Some(stored) = store.get(&pk).await? {
            text = stored.opt_str("text").map(str::to_owned).or(text);
        }
    }
    let text = text.map(|t| t.chars().take(TEXT_SHOWN).collect::<String>());
    let invoice_contact = invoice.links.contact_id.as_deref();
    let owned = |v: Option<&str>| v.map(str::to_owned);
    Ok(Cause {
        event_key: event_key.to_owned(),
        conversation_id: owned(conversation),
        sender: Sender {
            contact_id: owned(sender),
            name: owned(text_of("sender_name")),
        },
        text,
        invoice_contact_id: owned(invoice_contact),
        sender_is_invoice_contact: sender.is_some() && sender == invoice_contact,
    })
}

/// Files `item` (a proposal) as one of at most [`OPEN_MAX`] open ones of `conversation_id`:
/// the item and its key's place in the conversation's set in one decision's transaction, so
/// neither is written without the other. `false` when the item was filed before (the same tool
/// call again). A full set is read against its items once: an item no longer open gives its
/// place up (a resolution cut off before it freed it), and the filing is decided again.
pub async fn file<R>(
    env: &super::Env<'_, R>,
    org: &OrgId,
    conversation_id: &str,
    item: &ReviewItem,
) -> Result<bool, Refused> {
    let filing = || Filing {
        item: item.to_item(),
        key: item.key.clone(),
        set: open_pk(org, conversation_id),
    };
    let refused = |e: FileError| {
        match e {
        FileError::Store(e) => Refused::from(e),
        FileError::Full => Refused::conflict(
            "too_many_proposals",
            format!("a conversation holds at most {OPEN_MAX} open proposals: a person decides on them first"),
        ),
    }
    };
    let filed = match env.apply(filing(), |e| e).await {
        Err(FileError::Full) => {
            free_closed(env.store, org, &open_pk(org, conversation_id)).await?;
            env.apply(filing(), refused).await?
        }
        filed => filed.map_err(refused)?,
    };
    Ok(filed.is_new())
}

/// Why a proposal was not filed.
#[derive(Debug, thiserror::Error)]
enum FileError {
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// The conversation holds its most open proposals.
    #[error("the conversation's proposals are full")]
    Full,
}

/// A proposal's filing: its item put new with its key's place taken in the conversation's set
/// (held under [`OPEN_MAX`], or the key's own place); a repeat when the item is there.
struct Filing {
    item: crate::store::Item,
    key: String,
    /// The conversation's set of open proposals.
    set: String,
}

impl crate::store::Decision for Filing {
    type Out = ();
    type Error = FileError;

    fn keys(&self) -> Vec<String> {
        let pk = Step::PutNew(self.item.clone())
            .pk()
            .unwrap_or_default()
            .to_owned();
        vec![pk, self.set.clone()]
    }

    fn decide(
        &self,
        seen: &crate::store::Seen,
        _: chrono::DateTime<chrono::Utc>,
    ) -> Result<crate::store::Plan<()>, FileError> {
        use crate::store::{Plan, Written};
        if seen.stored().is_some() {
            return Ok(Plan::Done(Written::Repeat { stored: () }));
        }
        let open = match seen.get(1).and_then(|set| set.get(OPEN)) {
            Some(AttributeValue::Ss(keys)) => keys.as_slice(),
            _ => &[],
        };
        if open.len() >= OPEN_MAX && !open.contains(&self.key) {
            return Err(FileError::Full);
        }
        let key = crate::store::item::s(&self.key);
        let take = Update::new()
            .add(OPEN, AttributeValue::Ss(vec![self.key.clone()]))
            .when(Cond::Any(vec![
                Cond::Fewer(OPEN.into(), OPEN_MAX),
                Cond::Contains(OPEN.into(), key),
            ]));
        let steps = vec![
            Step::PutNew(self.item.clone()),
            Step::Update {
                pk: self.set.clone(),
                update: take,
            },
        ];
        Ok(Plan::Write { steps, out: () })
    }
}

/// Takes out of the set at `pk` every key whose review item is no longer open.
async fn free_closed(store: &Store, org: &OrgId, pk: &str) -> Result<(), Refused> {
    let Some(set) = store.get(pk).await? else {
        return Ok(());
    };
    let keys: Vec<String> = match set.get(OPEN) {
        Some(AttributeValue::Ss(keys)) => keys.clone(),
        _ => return Ok(()),
    };
    let pks: Vec<String> = keys
        .iter()
        .map(|k| review_item_pk(org, Reason::PaymentProposed, k))
        .collect();
    let items = store.get_many(&pks).await?;
    let closed: Vec<String> = keys
        .into_iter()
        .zip(items)
        .filter(|(_, item)| item.as_ref().and_then(|i| i.opt_str("state")) != Some("open"))
        .map(|(key, _)| key)
        .collect();
    if !closed.is_empty() {
        store
            .update_if(pk, &Update::new().take_from_set(OPEN, closed))
            .await?;
    }
    Ok(())
}

/// Where a proposal of `conversation_id` holds its place among the open ones, and the step that
/// gives up the place `key` holds (while that item is there, as a read of it says).
pub fn place(org: &OrgId, conversation_id: &str, key: &str) -> (String, Step) {
    let pk = open_pk(org, conversation_id);
    let update = Update::new()
        .take_from_set(OPEN, vec![key.to_owned()])
        .when(Cond::Exists);
    (pk.clone(), Step::Update { pk, update })
}
