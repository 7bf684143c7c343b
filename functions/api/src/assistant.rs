//! The assistant's tools are the product's tools: `GET /api/assistant/tools` lists the write
//! actions an assistant may take, with JSON-schema inputs, and `POST /api/assistant/calls`
//! performs one, keyed by (organisation, `call_id`). An agent framework that retries a tool
//! call acts once and gets the stored result; a `call_id` reused with another input is 409. Each
//! tool's own effect is keyed by the call too (the payment's and the credit note's identity,
//! the task's run, the reply's run), so it holds once even without the call's record.

use crate::Ctx;
use firmspace::effects::automation::{self, Action, Rule};
use firmspace::effects::{AssistedReply, Consequence, Trigger};
use firmspace::fields::{self, TEXT_MAX, TITLE_MAX};
use firmspace::http::{body_bytes, json_response, parse_json, ApiError};
use firmspace::ids::{EventKey, ExternalId};
use firmspace::ops::requests;
use firmspace::payments::Source;
use firmspace::review::{self, review_item_pk, Reason, Resolved};
use firmspace::store::Store;
use lambda_http::{Body, Response};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};
use utoipa::ToSchema;

use firmspace::effects::tools::{NOTE_MAX, TOOLS};

/// `GET /api/assistant/tools`.
pub fn tools() -> Response<Body> {
    let tools: Vec<Value> = TOOLS.iter().map(|t| t.to_json()).collect();
    json_response(200, &json!({ "tools": tools }))
}

/// `POST /api/assistant/calls`: one tool call.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// One of the names `GET /api/assistant/tools` lists.
    #[schema(example = "register_payment")]
    tool: String,
    /// The tool's input, as its `input_schema` describes.
    #[schema(value_type = Object)]
    input: Value,
    /// The agent's id of this call (1 to 255 bytes): the same id again is the same call.
    #[schema(example = "toolu_01A2b3")]
    call_id: String,
}

/// Performs a tool call once per (organisation, `call_id`): `{"call_id", "result",
/// "duplicate"}`; a refusal is the call's answer too, given again to a repeat.
pub async fn call(
    store: &Store,
    settings: &crate::Settings,
    ctx: &Ctx<'_>,
) -> Result<Response<Body>, ApiError> {
    let body: ToolCall = parse_json(body_bytes(ctx.req))?;
    let call_id = ExternalId::parse("call_id", &body.call_id).map_err(|e| ApiError {
        field: Some("call_id"),
        ..ApiError::bad_request("invalid_field", e.to_string())
    })?;
    if !TOOLS.iter().any(|t| t.name == body.tool) {
        let names: Vec<&str> = TOOLS.iter().map(|t| t.name).collect();
        return Err(ApiError::bad_request(
            "unknown_tool",
            format!("tool is one of {}", names.join(", ")),
        ));
    }
    let asked = requests::Request {
        by: &ctx.key.id,
        shared: Some(&ctx.org),
        key: call_id.as_str(),
        fingerprint: requests::fingerprint(
            &format!("assistant/{}", body.tool),
            body.input.to_string().as_bytes(),
        ),
    };
    let run = || perform(store, settings, ctx, &body.tool, &body.input, &call_id);
    let (status, result, duplicate) = asked.once_telling(store, ctx.now, run).await?;
    if status >= 400 {
        return Ok(json_response(status, &result));
    }
    Ok(json_response(
        200,
        &json!({"call_id": call_id.as_str(), "result": result, "duplicate": duplicate}),
    ))
}

fn input<T: DeserializeOwned>(raw: &Value) -> Result<T, ApiError> {
    serde_json::from_value(raw.clone()).map_err(|e| {
        ApiError::bad_request(
            "invalid_input",
            format!("input: {}", fields::plain(&e.to_string())),
        )
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReplyInput {
    conversation_id: String,
    text: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskInput {
    title: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PaymentInput {
    invoice_id: String,
    amount: Option<String>,
    actor: Option<String>,
}

#[derive(Deserialize)]
struct CreditInput {
    invoice_id: String,
    #[serde(flatten)]
    note: crate::credit_notes::NewNote,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResolveInput {
    reason: String,
    key: String,
    note: String,
}

async fn perform(
    store: &Store,
    settings: &crate::Settings,
    ctx: &Ctx<'_>,
    tool: &str,
    raw: &Value,
    call_id: &ExternalId,
) -> Result<(u16, Value), ApiError> {
    let event_key = EventKey::new("assistant", call_id.as_str());
    let result = match tool {
        "reply" => reply(store, settings, ctx, input(raw)?, call_id).await?,
        "create_task" => {
            let task: TaskInput = input(raw)?;
            let title = fields::line("title", &task.title, TITLE_MAX)?;
            let rule = Rule {
                org: ctx.org.clone(),
                rule_id: AssistedReply::RULE.into(),
                trigger: Trigger::MessageReceived,
                action: Action::CreateTask {
                    title: title.to_owned(),
                },
            };
            let created = automation::create_task(store, &rule, title, &event_key, ctx.now).await?;
            let run = automation::run_key(&rule.rule_id, &event_key);
            json!({"task_id": automation::task_id(&ctx.org, &run), "created": created})
        }
        "register_payment" => {
            let payment: PaymentInput = input(raw)?;
            let asked = crate::invoices::Asked {
                source: Source::Assistant,
                external_id: call_id.clone(),
                amount: payment.amount.as_deref(),
                actor: payment.actor.as_deref(),
            };
            crate::invoices::pay_with(store, ctx, &payment.invoice_id, asked).await?
        }
        "create_credit_note" => {
            let credit: CreditInput = input(raw)?;
            let (_, note) = crate::credit_notes::issue_with(
                store,
                ctx,
                &credit.invoice_id,
                call_id.clone(),
                credit.note,
            )
            .await?;
            note
        }
        _ => resolve(store, ctx, input(raw)?).await?,
    };
    Ok((200, result))
}

/// Queues the reply for the automation worker, which sends it once as the call's run.
async fn reply(
    store: &Store,
    settings: &crate::Settings,
    ctx: &Ctx<'_>,
    asked: ReplyInput,
    call_id: &ExternalId,
) -> Result<Value, ApiError> {
    let text = fields::text("text", &asked.text, TEXT_MAX)?;
    let conversation = firmspace::messages::conversation(store, &ctx.org, &asked.conversation_id)
        .await?
        .ok_or_else(|| ApiError::not_found("conversation"))?;
    if !conversation.provider.can_reply() {
        return Err(ApiError::new(
            409,
            "reply_unsupported",
            "this conversation's channel takes no replies from us",
        ));
    }
    let publisher = settings.automation.as_ref().ok_or_else(|| {
        ApiError::new(
            503,
            "replies_unavailable",
            "the reply could not be queued; retry",
        )
    })?;
    let message = Consequence::Assisted(AssistedReply {
        org: ctx.org.clone(),
        call_id: call_id.as_str().to_owned(),
        conversation_id: asked.conversation_id.clone(),
        text: text.to_owned(),
        at: ctx.now,
    });
    let published = publisher
        .publish(std::slice::from_ref(&message))
        .await
        .ok()
        .filter(|p| p.sent == 1);
    if published.is_none() {
        return Err(ApiError::new(
            503,
            "replies_unavailable",
            "the reply could not be queued; retry",
        ));
    }
    Ok(
        json!({"state": "sending", "conversation_id": asked.conversation_id,
        "run": automation::run_key(AssistedReply::RULE, &EventKey::new("assistant", call_id.as_str()))}),
    )
}

async fn resolve(store: &Store, ctx: &Ctx<'_>, asked: ResolveInput) -> Result<Value, ApiError> {
    let reason = Reason::parse(&asked.reason).ok_or_else(|| {
        ApiError::bad_request("invalid_input", "input: reason is not a review reason")
    })?;
    let key = fields::reference("key", &asked.key, fields::KEY_MAX * 2)?;
    let note = fields::text("note", &asked.note, NOTE_MAX)?;
    let pk = review_item_pk(&ctx.org, reason, key);
    Ok(
        match review::resolve(store, &ctx.org, &pk, &ctx.key.id, note, ctx.now).await? {
            Resolved::Now { at } => json!({"state": "resolved", "at": at, "by": ctx.key.id}),
            Resolved::Already(item) => review::item_json(&item),
            Resolved::NotFound => return Err(ApiError::not_found("review item")),
        },
    )
}
