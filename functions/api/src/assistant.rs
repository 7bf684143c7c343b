//! The assistant's tools are the product's commands: `GET /api/assistant/tools` lists them with
//! the JSON schemas of their inputs (`firmspace::commands::tools`), and
//! `POST /api/assistant/calls` performs one as the calling key, claimed by (organisation,
//! `call_id`): an agent framework that retries a tool call acts once and gets the stored
//! result; a `call_id` reused with another input is 409.

use crate::Ctx;
use firmspace::commands::reads::ReadTool;
use firmspace::commands::requests::Looked;
use firmspace::commands::tools::{self, ToolView};
use firmspace::commands::{Input, Made, Outcome, Performed, RequestKey, ToolCall};
use firmspace::effects::automation::Tool;
use firmspace::http::{
    body_bytes, parse_json, replayed_response, typed_response, ApiError, RequestOutcome,
};
use firmspace::ids::ExternalId;
use firmspace::store::Store;
use lambda_http::{Body, Response};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

/// `GET /api/assistant/tools`: the writing tools, then the read tools.
pub(crate) fn tools() -> Response<Body> {
    let tools = tool_views().collect();
    typed_response(200, &AssistantTools { tools })
}

/// The tools: `reply`, `create_task`, `register_payment`, `create_credit_note`,
/// `resolve_review`; and the read tools `find_invoices`, `read_invoice`, `list_conversations`,
/// `list_review` (`readOnlyHint`).
#[derive(Serialize, ToSchema)]
pub struct AssistantTools {
    tools: Vec<ToolView>,
}

/// A tool call's result; a repeat of the `call_id` gets the stored one with `duplicate: true`.
#[derive(Serialize, ToSchema)]
pub struct AssistantCallAnswer {
    call_id: String,
    /// What the tool answers: the payment's answer, the credit note, `{"task_id", "created"}`,
    /// `{"state": "sending"}` for a reply, the resolution.
    #[schema(value_type = Object)]
    result: Value,
    duplicate: bool,
    /// A repeat's: when the call was first made and answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    first_at: Option<String>,
}

/// 400 `unknown_tool`, naming every tool.
fn unknown_tool() -> ApiError {
    let writing = Tool::ALL.into_iter().map(|t| t.name());
    let names: Vec<String> = writing
        .chain(ReadTool::ALL.map(|t| t.name().to_owned()))
        .collect();
    ApiError::bad_request(
        "unknown_tool",
        format!("tool is one of {}", names.join(", ")),
    )
}

/// Performs a tool call once per (organisation, `call_id`): `{"call_id", "result",
/// "duplicate"}`; a refusal is the call's answer too, given again to a repeat.
pub(crate) async fn call(store: &Store, ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let body: ToolCall = parse_json(body_bytes(ctx.req))?;
    let call_id = ExternalId::parse("call_id", &body.call_id).map_err(|e| ApiError {
        field: Some("call_id"),
        ..ApiError::bad_request("invalid_field", e.to_string())
    })?;
    let by = firmspace::commands::Actor::Assistant(ctx.key.clone());
    // A read tool reads, under the key's `read` scope: nothing to claim, nothing kept.
    if let Some(read) = ReadTool::parse(&body.tool) {
        let result = read.run(store, &by, body.input.get()).await?;
        let answer = AssistantCallAnswer {
            call_id: call_id.as_str().to_owned(),
            result,
            duplicate: false,
            first_at: None,
        };
        return Ok(typed_response(200, &answer));
    }
    let tool = Input::tool(&body.tool).map_err(|_| unknown_tool())?;
    let input = Input {
        tool,
        json: body.input.get(),
        org: &ctx.org,
    };
    let command = input.command()?;
    // The tool and its input as values: a framework that sends the call again re-serialised
    // (another key order, other spacing) sends the same call.
    let input: Value = serde_json::from_str(body.input.get()).unwrap_or_default();
    let asked = format!("{}\0{input}", body.tool).into_bytes();
    let key = RequestKey::Call(call_id.clone());
    let done = command
        .perform(&ctx.env(store), &by, &key, &[&asked])
        .await?;
    if !done.outcome().is_made() {
        return Ok(firmspace::http::performed_response(&done));
    }
    let repeat = done.repeat();
    let (result, first_at) = match done {
        Performed::Now { answer, .. } => (answer, None),
        Performed::Again(kept) => (kept.answer, kept.at),
    };
    let answer = AssistantCallAnswer {
        call_id: call_id.as_str().to_owned(),
        result,
        duplicate: repeat,
        first_at,
    };
    let body = serde_json::to_value(answer).expect("an answer serialises");
    Ok(replayed_response(200, &body, repeat))
}

/// `GET /api/requests/{key}` (`call`: `GET /api/assistant/calls/{call_id}`): the request's
/// record as [`firmspace::commands::requests::Request::look_up`] reads it, or 404 `never_arrived`.
pub(crate) async fn ask(
    store: &Store,
    ctx: &Ctx<'_>,
    key: &str,
    call: bool,
) -> Result<Response<Body>, ApiError> {
    let asked = firmspace::commands::requests::Request {
        by: &ctx.key.id,
        shared: call.then_some(&ctx.org),
        key,
        fingerprint: String::new(),
    };
    match asked.look_up(store).await? {
        Some(found) if call => Ok(typed_response(
            200,
            &RequestOutcome::of(key, as_called(key, found)),
        )),
        Some(found) => Ok(typed_response(200, &RequestOutcome::of(key, found))),
        None => Err(ApiError::new(
            404,
            "never_arrived",
            "nothing arrived under this key",
        )),
    }
}

/// A call's record as the call was answered: a done tool's result in the call's own shape,
/// `200 {"call_id", "result", "duplicate": false}` (a refusal is kept as it was answered).
fn as_called(call_id: &str, found: Looked) -> Looked {
    match found.done {
        Some((outcome, result)) if outcome.is_made() => {
            let called = firmspace::http::KeptCall {
                call_id: call_id.to_owned(),
                result,
                duplicate: false,
            };
            let called = serde_json::to_value(called).expect("a call serialises");
            Looked {
                done: Some((Outcome::Made(Made::Done), called)),
                at: found.at,
            }
        }
        _ => found,
    }
}

/// The names of the tools, as `GET /api/assistant/tools` lists them.
pub fn listed_names() -> Vec<String> {
    tool_views().map(|t| t.name).collect()
}

/// The body of `POST /api/assistant/calls` as the document describes it (`ToolCall`): one shape
/// per tool (`{Tool}Call`), each with that tool's own input (`{Tool}Input`), as `GET
/// /api/assistant/tools` lists them (`ToolCall` reads the call, the tool's input type its
/// `input`).
pub struct CallBody;

/// `create_task` → `CreateTask`.
fn camel(name: &str) -> String {
    name.split('_')
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect()
}

fn tool_views() -> impl Iterator<Item = ToolView> {
    let writing = Tool::ALL.into_iter().map(tools::view);
    writing.chain(ReadTool::ALL.map(ReadTool::view))
}

fn schema_of(value: Value) -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
    serde_json::from_value(value).expect("a schema")
}

impl utoipa::PartialSchema for CallBody {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
        let shapes: Vec<Value> = tool_views()
            .map(|tool| serde_json::json!({"$ref": format!("#/components/schemas/{}Call", camel(&tool.name))}))
            .collect();
        schema_of(serde_json::json!({
            "description": "One tool call: `tool` names one of the tools `GET \
                /api/assistant/tools` lists, `input` is that tool's input, `call_id` the agent's \
                id of the call.",
            "oneOf": shapes,
        }))
    }
}

impl ToSchema for CallBody {
    fn name() -> std::borrow::Cow<'static, str> {
        "ToolCall".into()
    }

    fn schemas(
        schemas: &mut Vec<(
            String,
            utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
        )>,
    ) {
        for tool in tool_views() {
            let name = camel(&tool.name);
            schemas.push((format!("{name}Input"), schema_of(tool.input_schema)));
            let call = serde_json::json!({
                "type": "object",
                "description": format!("A call of `{}`.", tool.name),
                "properties": {
                    "tool": {"type": "string", "enum": [tool.name]},
                    "input": {"$ref": format!("#/components/schemas/{name}Input")},
                    "call_id": {
                        "type": "string", "minLength": 1, "maxLength": 255,
                        "pattern": "^[^\\s#\\x00-\\x1f\\x7f-\\x9f]+$",
                        "description": "The agent's id of this call (1 to 255 bytes, no white \
                            space, control character or `#`): the same id again is the same call.",
                        "example": "toolu_01A2b3",
                    },
                },
                "required": ["tool", "input", "call_id"],
                "additionalProperties": false,
            });
            schemas.push((format!("{name}Call"), schema_of(call)));
        }
    }
}
