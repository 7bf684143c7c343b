//! The tools an assistant or a model is offered are commands: each [`Tool`]'s input is a typed
//! struct here, its JSON schema derived from that struct (so what is offered is what is read),
//! and a call is read into the [`Command`] it asks for.

use super::amount::AmountText;
use super::{crm, money, review, AnyCommand, Decision};
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
    /// The item's reason, e.g. `payment_proposed`.
    reason: String,
    /// The item's key, as `GET /api/review` lists it.
    #[schema(max_length = 510)]
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

/// What each tool does, as the assistant and the model are told.
fn description(tool: Tool) -> &'static str {
    match tool {
        Tool::Reply => {
            "Send a text into a Telegram or WhatsApp conversation, once. The send goes \
                        through the channel's API from the automation worker; the result says \
                        `sending`, and the conversation shows the message once it is sent."
        }
        Tool::CreateTask => "Create a task for the team, once.",
        Tool::RegisterPayment => {
            "Record a payment on an invoice (source `assistant`), through the \
                        same payment function as every other payment: the open amount when no \
                        amount is given; never more than is open. `amount` is a decimal string \
                        or a JSON number in major units. Called by a rule's AI step, it books \
                        nothing: it proposes the payment to a person (a `payment_proposed` \
                        review item)."
        }
        Tool::CreateCreditNote => {
            "Issue a credit note (CN-00001, ...) on an issued invoice: the \
                        unpaid part is credited first; what falls on the paid part is a refund \
                        for a person."
        }
        Tool::ResolveReview => {
            "Resolve an open review item (GET /api/review lists them) with a \
                        note; `decision: apply` books what a `payment_proposed` item proposes. \
                        Needs a key with the `write` and `ops` scopes."
        }
    }
}

/// The tool's input schema, derived from its input type.
pub fn input_schema(tool: Tool) -> Value {
    let schema = match tool {
        Tool::Reply => ReplyInput::schema(),
        Tool::CreateTask => TaskInput::schema(),
        Tool::RegisterPayment => PaymentInput::schema(),
        Tool::CreateCreditNote => CreditNoteInput::schema(),
        Tool::ResolveReview => ResolveInput::schema(),
    };
    serde_json::to_value(schema).unwrap_or(Value::Null)
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

/// MCP's tool annotations: none reads only; a tool that moves money (or, resolving a review
/// item, may) is destructive; every one acts once per `call_id`, so a call sent again has no
/// further effect; a reply reaches the world outside (the messenger).
pub fn annotations(tool: Tool) -> Annotations {
    let moves_money = matches!(
        tool,
        Tool::RegisterPayment | Tool::CreateCreditNote | Tool::ResolveReview
    );
    Annotations {
        read_only_hint: false,
        destructive_hint: moves_money,
        idempotent_hint: true,
        open_world_hint: matches!(tool, Tool::Reply),
    }
}

pub fn describe(tool: Tool) -> (String, &'static str, Value) {
    (tool.name(), description(tool), input_schema(tool))
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

fn read<T: DeserializeOwned>(json: &str) -> Result<T, Refused> {
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
        Ok(match self.tool {
            Tool::Reply => {
                let input: ReplyInput = read(self.json)?;
                crm::Reply {
                    conversation_id: input.conversation_id,
                    text: input.text,
                }
                .into()
            }
            Tool::CreateTask => crm::CreateTask {
                title: read::<TaskInput>(self.json)?.title,
            }
            .into(),
            Tool::RegisterPayment => {
                let input: PaymentInput = read(self.json)?;
                money::RegisterPayment {
                    invoice_id: input.invoice_id,
                    source: Source::Assistant,
                    amount: input.amount,
                    actor: input.actor,
                }
                .into()
            }
            Tool::CreateCreditNote => {
                let input: CreditNoteInput = read(self.json)?;
                money::CreateCreditNote {
                    invoice_id: input.invoice_id,
                    note: money::CreditInput {
                        amount: input.amount,
                        reason: input.reason,
                        lines: input.lines,
                    },
                }
                .into()
            }
            Tool::ResolveReview => {
                let input: ResolveInput = read(self.json)?;
                let reason = Reason::parse(&input.reason).ok_or_else(|| {
                    Refused::invalid("invalid_input", "input: reason is not a review reason")
                })?;
                let key = fields::reference("key", &input.key, fields::KEY_MAX * 2)?;
                review::ResolveReview {
                    pk: review_item_pk(self.org, reason, key),
                    note: input.note,
                    decision: input.decision,
                    named: review::Named {
                        invoice_id: input.invoice_id,
                        same_as: input.same_as,
                        // What a person approves; no tool applies a proposal.
                        amount: None,
                    },
                }
                .into()
            }
        })
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
