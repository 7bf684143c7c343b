//! The tools an assistant or a model is offered are commands: each [`Tool`]'s input is a typed
//! struct here, its JSON schema derived from that struct (so what is offered is what is read),
//! and a call is read into the [`Command`] it asks for.

use super::amount::AmountText;
use super::{crm, money, review, AnyCommand, Command, Decision};
use crate::commands::Refused;
use crate::effects::automation::Tool;
use crate::fields;
use crate::ids::OrgId;
use crate::payments::Source;
use crate::review::{review_item_pk, Reason};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{PartialSchema, ToSchema};

/// `reply`: a text into a conversation.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplyInput {
    /// `cv_...` from `GET /api/conversations`.
    #[schema(max_length = 64)]
    conversation_id: String,
    /// 1 to 4000 characters.
    #[schema(min_length = 1, max_length = 4000)]
    text: String,
}

/// `create_task`: a task for the team.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskInput {
    /// 1 to 500 characters.
    #[schema(min_length = 1, max_length = 500)]
    title: String,
}

/// `register_payment`: a payment on an invoice.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PaymentInput {
    /// `inv_...`.
    invoice_id: String,
    #[schema(inline)]
    amount: Option<AmountText>,
    /// For whom the assistant acts (1 to 128 bytes).
    #[schema(max_length = 128)]
    actor: Option<String>,
}

/// `create_credit_note`: a credit note on an issued invoice.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreditNoteInput {
    invoice_id: String,
    #[schema(inline)]
    amount: Option<AmountText>,
    /// Why: 1 to 500 characters.
    #[schema(min_length = 1, max_length = 500)]
    reason: String,
    /// At most 100; each a description (1 to 500 characters) and an amount.
    #[schema(inline, max_items = 100)]
    lines: Option<Vec<super::money::CreditLineInput>>,
}

/// `resolve_review`: an open review item resolved, with a decision on what it proposed.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResolveInput {
    // The item's reason, e.g. `payment_proposed` (no doc comment: utoipa would wrap the
    // inlined enum in an `allOf` with an `object`, a schema no value satisfies).
    #[schema(value_type = crate::review::Reason, inline)]
    reason: String,
    /// The item's key, as `GET /api/review` lists it.
    #[schema(min_length = 1, max_length = 510)]
    key: String,
    /// 1 to 2000 characters.
    #[schema(min_length = 1, max_length = 2000)]
    note: String,
    #[schema(inline)]
    decision: Option<Decision>,
    /// `apply` of money a payment kept: the invoice it goes on.
    #[schema(max_length = 128)]
    invoice_id: Option<String>,
    /// `same_money`: the event key of the payment the item's payment is the same money as.
    #[serde(rename = "as")]
    #[schema(max_length = 510)]
    same_as: Option<String>,
}

/// A tool an assistant or a model may call, as one type: its input (whose JSON schema is what
/// is offered, so what is offered is what is read), what it is told, MCP's hints, and the
/// command an input asks for, whose `NAME` is the tool's (a unit test holds them).
pub trait ToolInput: DeserializeOwned + PartialSchema {
    type Command: Command + Into<AnyCommand>;
    /// What it does, as the assistant and the model are told.
    const DESCRIPTION: &'static str;
    /// It moves money (or, resolving a review item, may).
    const MOVES_MONEY: bool = false;
    /// It reaches the world outside (a messenger).
    const OPEN_WORLD: bool = false;

    /// The command this input asks for, in the organisation `org`.
    fn command(self, org: &OrgId) -> Result<Self::Command, Refused>;
}

/// What a tool is, read from its one type.
struct Spec {
    name: &'static str,
    /// Whether a rule's AI step may ask for its command (`Command::FOR_MODEL`).
    for_model: bool,
    description: &'static str,
    moves_money: bool,
    open_world: bool,
    schema: fn() -> Value,
    command: fn(&str, &OrgId) -> Result<AnyCommand, Refused>,
}

fn spec_of<I: ToolInput>() -> Spec {
    Spec {
        name: <I::Command as Command>::NAME,
        for_model: <I::Command as Command>::FOR_MODEL,
        description: I::DESCRIPTION,
        moves_money: I::MOVES_MONEY,
        open_world: I::OPEN_WORLD,
        schema: || serde_json::to_value(I::schema()).unwrap_or(Value::Null),
        command: |json, org| Ok(input::<I>(json)?.command(org)?.into()),
    }
}

/// Each tool's type: the one place a tool is tied to what it is.
fn spec(tool: Tool) -> Spec {
    match tool {
        Tool::Reply => spec_of::<ReplyInput>(),
        Tool::CreateTask => spec_of::<TaskInput>(),
        Tool::RegisterPayment => spec_of::<PaymentInput>(),
        Tool::CreateCreditNote => spec_of::<CreditNoteInput>(),
        Tool::ResolveReview => spec_of::<ResolveInput>(),
    }
}

impl ToolInput for ReplyInput {
    type Command = crm::Reply;
    const DESCRIPTION: &'static str = "Send a text into a Telegram or WhatsApp conversation, \
        once. The send goes through the channel's API from the automation worker; the result \
        says `sending`, and the conversation shows the message once it is sent.";
    const OPEN_WORLD: bool = true;

    fn command(self, _org: &OrgId) -> Result<crm::Reply, Refused> {
        Ok(crm::Reply {
            conversation_id: self.conversation_id,
            text: self.text,
        })
    }
}

impl ToolInput for TaskInput {
    type Command = crm::CreateTask;
    const DESCRIPTION: &'static str = "Create a task for the team, once.";

    fn command(self, _org: &OrgId) -> Result<crm::CreateTask, Refused> {
        Ok(crm::CreateTask { title: self.title })
    }
}

impl ToolInput for PaymentInput {
    type Command = money::RegisterPayment;
    const DESCRIPTION: &'static str = "Record a payment on an invoice (source `assistant`), \
        through the same payment function as every other payment: the open amount when no \
        amount is given; never more than is open. `amount` is a decimal string or a JSON \
        number in major units. Called by a rule's AI step, it books nothing: it proposes the \
        payment to a person (a `payment_proposed` review item).";
    const MOVES_MONEY: bool = true;

    fn command(self, _org: &OrgId) -> Result<money::RegisterPayment, Refused> {
        Ok(money::RegisterPayment {
            invoice_id: self.invoice_id,
            source: Source::Assistant,
            amount: self.amount,
            actor: self.actor,
        })
    }
}

impl ToolInput for CreditNoteInput {
    type Command = money::CreateCreditNote;
    const DESCRIPTION: &'static str = "Issue a credit note (CN-00001, ...) on an issued \
        invoice: the unpaid part is credited first; what falls on the paid part is a refund \
        for a person.";
    const MOVES_MONEY: bool = true;

    fn command(self, _org: &OrgId) -> Result<money::CreateCreditNote, Refused> {
        Ok(money::CreateCreditNote {
            invoice_id: self.invoice_id,
            note: money::CreditInput {
                amount: self.amount,
                reason: self.reason,
                lines: self.lines,
            },
        })
    }
}

impl ToolInput for ResolveInput {
    type Command = review::ResolveReview;
    const DESCRIPTION: &'static str = "Resolve an open review item (GET /api/review lists \
        them) with a note; `decision: apply` books what a `payment_proposed` item proposes. \
        Needs a key with the `write` and `ops` scopes.";
    const MOVES_MONEY: bool = true;

    fn command(self, org: &OrgId) -> Result<review::ResolveReview, Refused> {
        let reason = Reason::parse(&self.reason).ok_or_else(|| {
            Refused::invalid("invalid_input", "input: reason is not a review reason")
        })?;
        let key = fields::reference("key", &self.key, fields::KEY_MAX * 2)?;
        Ok(review::ResolveReview {
            pk: review_item_pk(org, reason, key),
            note: self.note,
            decision: self.decision,
            named: review::Named {
                invoice_id: self.invoice_id,
                same_as: self.same_as,
                // What a person approves; no tool applies a proposal.
                amount: None,
            },
        })
    }
}

/// Whether a rule's AI step may be given `tool`: whether a model may ask for its command
/// (`Command::FOR_MODEL`; a payment it only proposes).
pub fn for_model(tool: Tool) -> bool {
    spec(tool).for_model
}

/// The tool's input schema, derived from its input type.
pub fn input_schema(tool: Tool) -> Value {
    (spec(tool).schema)()
}

/// A tool as `GET /api/assistant/tools` lists it, with MCP's annotations, so a client can ask
/// a person before a tool that moves money.
pub fn view(tool: Tool) -> ToolView {
    let (name, description, input_schema) = describe(tool);
    ToolView {
        name,
        description,
        input_schema,
        annotations: annotations(tool),
    }
}

/// One tool an assistant may call (`AssistantTool`).
#[derive(Serialize, ToSchema)]
#[schema(as = AssistantTool)]
pub struct ToolView {
    #[schema(example = "register_payment")]
    pub name: String,
    pub description: &'static str,
    /// The input's JSON schema.
    #[schema(value_type = Object)]
    pub input_schema: Value,
    pub annotations: Annotations,
}

/// MCP's tool annotations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    pub read_only_hint: bool,
    /// It moves money (or, resolving a review item, may).
    pub destructive_hint: bool,
    /// A call sent again (the same `call_id`) has no further effect.
    pub idempotent_hint: bool,
    /// It reaches the world outside (a messenger).
    pub open_world_hint: bool,
}

/// MCP's tool annotations: no writing tool reads only; a tool that moves money (or, resolving
/// a review item, may) is destructive; every one acts once per `call_id`, so a call sent again
/// has no further effect; a reply reaches the world outside (the messenger).
pub fn annotations(tool: Tool) -> Annotations {
    let spec = spec(tool);
    Annotations {
        read_only_hint: false,
        destructive_hint: spec.moves_money,
        idempotent_hint: true,
        open_world_hint: spec.open_world,
    }
}

pub fn describe(tool: Tool) -> (String, &'static str, Value) {
    let spec = spec(tool);
    (spec.name.to_owned(), spec.description, (spec.schema)())
}

/// One tool call as an assistant sends it: `{"tool", "input", "call_id"}`. `input` is kept as
/// its JSON text, so an amount in it is read from the text, never through a float.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// One of the names `GET /api/assistant/tools` lists.
    #[schema(example = "create_task")]
    pub tool: String,
    /// The tool's input, as its `input_schema` describes.
    #[schema(value_type = Object)]
    pub input: Box<serde_json::value::RawValue>,
    /// The agent's id of this call (1 to 255 bytes): the same id again is the same call.
    #[schema(example = "toolu_01A2b3")]
    pub call_id: String,
}

/// A tool call's input, read into its command.
pub struct Input<'a> {
    pub tool: Tool,
    /// The input's JSON text.
    pub json: &'a str,
    pub org: &'a OrgId,
}

/// A tool's input read from its JSON text, a writing tool's or a read tool's alike:
/// `invalid_input` saying what is wrong with it.
pub fn input<T: DeserializeOwned>(json: &str) -> Result<T, Refused> {
    serde_json::from_str(json).map_err(|e| {
        Refused::invalid(
            "invalid_input",
            format!("input: {}", fields::plain(&e.to_string())),
        )
    })
}

impl Input<'_> {
    /// The tool named `name`, or 400 `unknown_tool` naming them all.
    pub fn tool(name: &str) -> Result<Tool, Refused> {
        Tool::parse(name).ok_or_else(|| {
            let names: Vec<String> = Tool::ALL.iter().map(|t| t.name()).collect();
            Refused::invalid(
                "unknown_tool",
                format!("tool is one of {}", names.join(", ")),
            )
        })
    }

    pub fn command(&self) -> Result<AnyCommand, Refused> {
        (spec(self.tool).command)(self.json, self.org)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_tool_schema_is_derived_from_the_input_it_reads() {
        for tool in Tool::ALL {
            let schema = input_schema(tool);
            assert_eq!(schema["type"], "object", "{tool:?}");
            assert_eq!(schema["additionalProperties"], false, "{tool:?}");
            assert!(schema["properties"].is_object(), "{tool:?}");
        }
        let pay = input_schema(Tool::RegisterPayment);
        assert_eq!(pay["required"], json!(["invoice_id"]));
        assert!(
            pay["properties"]["amount"].to_string().contains("number"),
            "{pay}"
        );
        let reply = input_schema(Tool::Reply);
        assert_eq!(reply["properties"]["text"]["maxLength"], fields::TEXT_MAX);
        let task = input_schema(Tool::CreateTask);
        assert_eq!(task["properties"]["title"]["maxLength"], fields::TITLE_MAX);
        let resolve = input_schema(Tool::ResolveReview);
        assert_eq!(
            resolve["properties"]["note"]["maxLength"],
            crate::review::NOTE_MAX
        );
    }

    #[test]
    fn every_tool_is_the_command_of_its_name() {
        let org = OrgId::parse("o1234567890ab").unwrap();
        for tool in Tool::ALL {
            let json = match tool {
                Tool::Reply => r#"{"conversation_id": "cv_1", "text": "x"}"#,
                Tool::CreateTask => r#"{"title": "x"}"#,
                Tool::RegisterPayment => r#"{"invoice_id": "inv_1"}"#,
                Tool::CreateCreditNote => r#"{"invoice_id": "inv_1", "reason": "x"}"#,
                Tool::ResolveReview => r#"{"reason": "payment_proposed", "key": "k", "note": "x"}"#,
            };
            let input = Input {
                tool,
                json,
                org: &org,
            };
            let command = input.command().unwrap();
            assert_eq!(command.name(), tool.name(), "{tool:?}");
        }
    }

    #[test]
    fn an_unknown_field_in_an_input_is_refused_as_the_schema_says() {
        let org = OrgId::parse("o1234567890ab").unwrap();
        let input = Input {
            tool: Tool::CreateTask,
            json: r#"{"title": "x", "extra": 1}"#,
            org: &org,
        };
        assert_eq!(input.command().unwrap_err().code, "invalid_input");
    }
}
