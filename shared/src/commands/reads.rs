//! The assistant's read tools: what an assistant needs to find the ids its writing tools take
//! (an invoice by its number or its contact, with what is open; an invoice with its payments;
//! a contact's conversations and their last messages; the open review items with what they are
//! about). Each only reads (`readOnlyHint`), needs the key's `read` scope, answers the types the
//! REST routes answer, and is listed and called beside the writing tools ([`super::tools`]):
//! they write nothing, so they are no commands, but they are read the same way
//! ([`super::tools::input`]) and refused in the same words ([`Refused`]).

use super::tools::{Annotations, ToolView};
use super::{Actor, Refused};
use crate::ids::OrgId;
use crate::messages;
use crate::messages::conversation::ConversationView;
use crate::messages::item::MessageView;
use crate::orgs::Scope;
use crate::payments::detail::{self, InvoiceDetail};
use crate::payments::invoice::{self, InvoiceView};
use crate::review::{self, ReviewView};
use crate::store::Store;
use rust_decimal::Decimal;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::future::Future;
use utoipa::{PartialSchema, ToSchema};

/// How many items a read tool answers at most.
const SHOWN: usize = 20;
/// How many of a conversation's last messages `list_conversations` shows.
const LAST_MESSAGES: usize = 3;

/// The read tools, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadTool {
    FindInvoices,
    ReadInvoice,
    ListConversations,
    ListReview,
}

/// The longest invoice number a search takes, in characters.
const NUMBER_MAX: usize = 32;
/// The longest contact id a search takes, in characters (its schema's `maxLength`).
const REF_CHARS: usize = 128;

/// `find_invoices`: invoices by number or contact, newest first.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FindInvoicesInput {
    /// The invoice's number as people write it (`INV-00012`, any case).
    #[schema(min_length = 1, max_length = 32)]
    number: Option<String>,
    /// `ct_...`: the contact's invoices.
    #[schema(min_length = 1, max_length = 128)]
    contact_id: Option<String>,
    /// Only invoices with money still open.
    open: Option<bool>,
}

/// `read_invoice`: one invoice with its payments and credit notes.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadInvoiceInput {
    /// `inv_...`.
    #[schema(min_length = 1, max_length = 128)]
    invoice_id: String,
}

/// `list_conversations`: conversations, the latest first, each with its last messages.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ListConversationsInput {
    /// `ct_...`: only this contact's.
    #[schema(min_length = 1, max_length = 128)]
    contact_id: Option<String>,
}

/// `list_review`: the open review items, newest first, each with what it is about.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ListReviewInput {
    /// Only items of this reason (`payment_proposed`, `possible_same_money`, ...).
    #[schema(value_type = Option<crate::review::Reason>, inline)]
    reason: Option<String>,
}

/// A conversation with its last messages.
#[derive(Serialize, ToSchema)]
pub struct ConversationWithMessages {
    #[serde(flatten)]
    conversation: ConversationView,
    /// Its last messages, oldest first.
    last_messages: Vec<MessageView>,
}

impl ReadTool {
    pub const ALL: [Self; 4] = [
        Self::FindInvoices,
        Self::ReadInvoice,
        Self::ListConversations,
        Self::ListReview,
    ];

    /// Each tool's type: the one place a read tool is tied to what it is.
    fn spec(self) -> Spec {
        match self {
            Self::FindInvoices => spec_of::<FindInvoicesInput>(),
            Self::ReadInvoice => spec_of::<ReadInvoiceInput>(),
            Self::ListConversations => spec_of::<ListConversationsInput>(),
            Self::ListReview => spec_of::<ListReviewInput>(),
        }
    }

    pub fn name(self) -> &'static str {
        self.spec().name
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }

    /// As `GET /api/assistant/tools` lists it: read only, and so harmless to call again.
    pub fn view(self) -> ToolView {
        let spec = self.spec();
        ToolView {
            name: spec.name.to_owned(),
            description: spec.description,
            input_schema: (spec.schema)(),
            annotations: Annotations {
                read_only_hint: true,
                destructive_hint: false,
                idempotent_hint: true,
                open_world_hint: false,
            },
        }
    }

    /// What the tool reads for `by`, in its organisation, from its input's JSON text: refused
    /// `forbidden` unless `by` holds the `read` scope.
    pub async fn run(self, store: &Store, by: &Actor, json: &str) -> Result<Value, Refused> {
        by.may(&[Scope::Read])?;
        (self.spec().run)(store, by.org(), json).await
    }
}

/// A read tool as one type: its input (whose JSON schema is what is offered, so what is offered
/// is what is read), its name, what the assistant is told, and what it reads.
trait ReadInput: DeserializeOwned + PartialSchema {
    const NAME: &'static str;
    const DESCRIPTION: &'static str;
    type Answer: Serialize;

    fn answer(
        self,
        store: &Store,
        org: &OrgId,
    ) -> impl Future<Output = Result<Self::Answer, Refused>> + Send;
}

/// A read tool's answer, on its way.
type Reading<'a> = std::pin::Pin<Box<dyn Future<Output = Result<Value, Refused>> + Send + 'a>>;

/// What a read tool is, read from its one type.
struct Spec {
    name: &'static str,
    description: &'static str,
    schema: fn() -> Value,
    run: for<'a> fn(&'a Store, &'a OrgId, &'a str) -> Reading<'a>,
}

fn spec_of<I: ReadInput>() -> Spec {
    Spec {
        name: I::NAME,
        description: I::DESCRIPTION,
        schema: || serde_json::to_value(I::schema()).unwrap_or(Value::Null),
        run: |store, org, json| {
            Box::pin(async move {
                let input: I = super::tools::input(json)?;
                Ok(to_value(input.answer(store, org).await?))
            })
        },
    }
}

/// An input's field held to the limit its schema documents: `invalid_input` naming it.
fn within(field: &str, value: Option<&str>, max_chars: usize) -> Result<(), Refused> {
    match value {
        Some(v) if v.is_empty() || v.chars().count() > max_chars => {
            let detail = format!("input: {field} is 1 to {max_chars} characters");
            Err(Refused::invalid("invalid_input", detail))
        }
        _ => Ok(()),
    }
}

fn to_value<T: Serialize>(answer: T) -> Value {
    serde_json::to_value(answer).expect("an answer serialises")
}

#[derive(Serialize)]
struct Items<T> {
    items: Vec<T>,
}

impl ReadInput for FindInvoicesInput {
    const NAME: &'static str = "find_invoices";
    const DESCRIPTION: &'static str = "Find invoices by number (INV-00012) or by contact \
        among the newest 200, newest first, each with what is paid and what is open: the invoice_id register_payment \
        takes.";
    type Answer = Items<InvoiceView>;

    async fn answer(self, store: &Store, org: &OrgId) -> Result<Items<InvoiceView>, Refused> {
        let input = self;
        within("number", input.number.as_deref(), NUMBER_MAX)?;
        within("contact_id", input.contact_id.as_deref(), REF_CHARS)?;
        let number = input.number.map(|n| n.trim().to_uppercase());
        let items = invoice::list(store, org, 200)
            .await?
            .iter()
            .map(|i| i.view())
            .filter(|i| {
                number
                    .as_ref()
                    .is_none_or(|n| i.number.to_uppercase() == *n)
            })
            .filter(|i| input.contact_id.is_none() || i.contact_id == input.contact_id)
            .filter(|i| {
                !input.open.unwrap_or(false)
                    || i.open.parse().is_ok_and(|o: Decimal| o > Decimal::ZERO)
            })
            .take(SHOWN)
            .collect();
        Ok(Items { items })
    }
}

impl ReadInput for ReadInvoiceInput {
    const NAME: &'static str = "read_invoice";
    const DESCRIPTION: &'static str = "Read one invoice with its payments and credit notes.";
    type Answer = InvoiceDetail;

    async fn answer(self, store: &Store, org: &OrgId) -> Result<InvoiceDetail, Refused> {
        within("invoice_id", Some(&self.invoice_id), REF_CHARS)?;
        detail::detail(store, org, &self.invoice_id)
            .await?
            .ok_or_else(|| Refused::not_found("invoice"))
    }
}

impl ReadInput for ListConversationsInput {
    const NAME: &'static str = "list_conversations";
    const DESCRIPTION: &'static str = "List conversations (a contact's, or all), the latest \
        first, each with its last messages: the conversation_id reply takes.";
    type Answer = Items<ConversationWithMessages>;

    async fn answer(self, store: &Store, org: &OrgId) -> Result<Self::Answer, Refused> {
        let input = self;
        within("contact_id", input.contact_id.as_deref(), REF_CHARS)?;
        let found = messages::conversations(store, org).await?;
        let mut items = Vec::new();
        let chosen = found
            .iter()
            .filter(|c| {
                input
                    .contact_id
                    .as_ref()
                    .is_none_or(|id| c.contact_id == *id)
            })
            .take(SHOWN);
        for conversation in chosen {
            let all = messages::messages(store, org, &conversation.id).await?;
            let urls = Default::default();
            let last = all.iter().rev().take(LAST_MESSAGES).rev();
            items.push(ConversationWithMessages {
                conversation: conversation.view(),
                last_messages: last.map(|m| m.view(&urls)).collect(),
            });
        }
        Ok(Items { items })
    }
}

impl ReadInput for ListReviewInput {
    const NAME: &'static str = "list_review";
    const DESCRIPTION: &'static str = "List the open review items, newest first, each saying \
        what it is about: the reason and key resolve_review takes.";
    type Answer = Items<ReviewView>;

    async fn answer(self, store: &Store, org: &OrgId) -> Result<Self::Answer, Refused> {
        let input = self;
        if input
            .reason
            .as_deref()
            .is_some_and(|r| review::Reason::parse(r).is_none())
        {
            let detail = "input: reason is not a review reason";
            return Err(Refused::invalid("invalid_input", detail));
        }
        let (open, _) = review::page(store, org, "open", 200, None, review::view).await?;
        let items = open
            .into_iter()
            .filter(|i| input.reason.is_none() || i.reason == input.reason)
            .take(SHOWN)
            .collect();
        Ok(Items { items })
    }
}
