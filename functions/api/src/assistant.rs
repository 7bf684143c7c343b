//! The assistant's tools are the product's commands: `GET /api/assistant/tools` lists them with
//! the JSON schemas of their inputs (`firmspace::commands::tools`), and
//! `POST /api/assistant/calls` performs one as the calling key, claimed by (organisation,
//! `call_id`): an agent framework that retries a tool call acts once and gets the stored
//! result; a `call_id` reused with another input is 409.

use crate::reads::ReadTool;
use crate::Ctx;
use firmspace::commands::tools::{self, ToolView};
use firmspace::commands::{Input, RequestKey, ToolCall};
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
pub fn tools() -> Response<Body> {
    let writing = Tool::ALL.into_iter().map(tools::view);
    let tools = writing.chain(ReadTool::ALL.map(ReadTool::view)).collect();
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
pub async fn call(store: &Store, ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let body: ToolCall = parse_json(body_bytes(ctx.req))?;
    let call_id = ExternalId::parse("call_id", &body.call_id).map_err(|e| ApiError {
        field: Some("call_id"),
        ..ApiError::bad_request("invalid_field", e.to_string())
    })?;
    // A read tool reads, under the key's `read` scope: nothing to claim, nothing kept.
    if let Some(read) = ReadTool::parse(&body.tool) {
        if let Err(scope) = ctx.key.may(firmspace::orgs::Scope::Read) {
            return Err(firmspace::commands::forbidden(scope).into());
        }
        let result = read.run(store, ctx, body.input.get()).await?;
        let answer = AssistantCallAnswer {
            call_id: call_id.as_str().to_owned(),
            result,
            duplicate: false,
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
    let asked = Some(format!("{}\0{input}", body.tool).into_bytes());
    let key = RequestKey::Call(call_id.clone());
    let by = firmspace::commands::Actor::Assistant(ctx.key.clone());
    let done = ctx.perform_as(store, by, (key, asked), command).await?;
    if !done.outcome.is_made() {
        return Ok(firmspace::http::done_response(&done));
    }
    let answer = AssistantCallAnswer {
        call_id: call_id.as_str().to_owned(),
        result: done.answer,
        duplicate: done.repeat,
    };
    let body = serde_json::to_value(answer).expect("an answer serialises");
    Ok(replayed_response(200, &body, done.repeat))
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
        Some(found) => Ok(typed_response(200, &RequestOutcome::of(key, found))),
        None => Err(ApiError::new(
            404,
            "never_arrived",
            "nothing arrived under this key",
        )),
    }
}
