//! Reads and settings of the consequence workers: notifications, activity logs, rules, tasks.

use crate::Ctx;
use firmspace::commands::model::{Models, MAX_TOKENS_MAX};
use firmspace::effects::automation::{self, Action};
use firmspace::effects::{activity, notify, EntityKind, Trigger};
use firmspace::fields::{self, FieldError, KEY_MAX, REF_MAX, TEXT_MAX, TITLE_MAX};
use firmspace::http::{self, body_bytes, json_response, parse_json, query, ApiError};
use firmspace::integrations::{self, IntegrationKind};
use firmspace::store::item::parse_tag;
use firmspace::store::Store;
use lambda_http::{Body, Response};
use serde::Deserialize;
use serde_json::json;
use utoipa::ToSchema;

pub async fn notifications(store: &Store, ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let recipient = query(ctx.req, "recipient").ok_or_else(|| {
        ApiError::bad_request("missing_recipient", "?recipient=<user_id> is required")
    })?;
    let recipient = fields::reference("recipient", &recipient, REF_MAX)?;
    let items = notify::list(store, &ctx.org, recipient).await?;
    Ok(json_response(200, &json!({ "items": items })))
}

#[derive(Deserialize, ToSchema)]
pub struct MarkRead {
    key: String,
}

pub async fn mark_read(store: &Store, ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let body: MarkRead = parse_json(body_bytes(ctx.req))?;
    // A notification key is an encoded event key (a `%` of the key becomes `%25`), or that and
    // `#` and an encoded member id: bounded in bytes, as the partition key it names is.
    const MAX: usize = 4 * KEY_MAX;
    fields::line("key", &body.key, MAX)?;
    if body.key.len() > MAX {
        return Err(FieldError {
            field: "key",
            reason: format!("must be at most {MAX} bytes"),
        }
        .into());
    }
    if notify::mark_read(store, &ctx.org, &body.key).await? {
        Ok(json_response(200, &json!({"key": body.key, "read": true})))
    } else {
        Err(ApiError::not_found("notification"))
    }
}

pub async fn activity_log(
    store: &Store,
    ctx: &Ctx<'_>,
    entity_kind: &str,
    entity_id: &str,
) -> Result<Response<Body>, ApiError> {
    let entity_kind = parse_tag::<EntityKind>(entity_kind).ok_or_else(|| {
        ApiError::bad_request(
            "invalid_entity_kind",
            "entity kind must be contact, deal or company",
        )
    })?;
    let entity_id = fields::reference("entity_id", entity_id, REF_MAX)?;
    let items = activity::list(store, &ctx.org, entity_kind, entity_id).await?;
    Ok(json_response(200, &json!({ "items": items })))
}

#[derive(Deserialize, ToSchema)]
pub struct NewRule {
    #[schema(value_type = firmspace::effects::Trigger)]
    trigger: String,
    #[schema(value_type = crate::schemas::Action)]
    action: serde_json::Value,
}

/// Every field of a rule's action within its limit, and fit for its trigger.
async fn check_action(
    store: &Store,
    ctx: &Ctx<'_>,
    trigger: Trigger,
    action: &Action,
    models: &Models,
) -> Result<(), ApiError> {
    match action {
        Action::CreateTask { title } => fields::line("title", title, TITLE_MAX).map(drop)?,
        Action::SendMessage { text, .. } | Action::Reply { text } => {
            fields::text("text", text, TEXT_MAX).map(drop)?
        }
        Action::Ai {
            model,
            instructions,
            tools,
            max_tokens,
        } => {
            if !models.allows(model) {
                return Err(ApiError::bad_request(
                    "model_not_allowed",
                    format!("model is one of {}", models.list().join(", ")),
                ));
            }
            if max_tokens.is_some_and(|m| !(1..=MAX_TOKENS_MAX).contains(&m)) {
                return Err(ApiError::bad_request(
                    "invalid_action",
                    format!("max_tokens is 1 to {MAX_TOKENS_MAX}"),
                ));
            }
            if let Some(tool) = tools.iter().find(|t| !t.for_model()) {
                return Err(ApiError::bad_request(
                    "invalid_action",
                    format!("an ai step may not be given {}", tool.name()),
                ));
            }
            fields::text("instructions", instructions, TEXT_MAX)?;
            let unique: std::collections::HashSet<_> = tools.iter().collect();
            if unique.len() != tools.len() {
                return Err(ApiError::bad_request(
                    "invalid_action",
                    "an ai action names each tool at most once",
                ));
            }
            let replies = tools.contains(&firmspace::effects::automation::Tool::Reply);
            if replies && trigger == Trigger::InvoicePaid {
                return Err(ApiError::bad_request(
                    "invalid_action",
                    "the reply tool answers a conversation: its trigger is message.received or call.missed",
                ));
            }
        }
    }
    if matches!(action, Action::Reply { .. }) && trigger == Trigger::InvoicePaid {
        return Err(ApiError::bad_request(
            "invalid_action",
            "reply answers a conversation: its trigger is message.received or call.missed",
        ));
    }
    if let Action::SendMessage { integration_id, .. } = action {
        // Only its kind: the api function may seal secrets but never open them.
        let kind = match integration_id.org == ctx.org {
            true => integrations::kind(store, integration_id).await?,
            false => None,
        };
        if kind != Some(IntegrationKind::Outbound) {
            return Err(ApiError::bad_request(
                "invalid_integration",
                "send_message needs an outbound integration of this organisation",
            ));
        }
    }
    Ok(())
}

pub async fn create_rule(
    store: &Store,
    ctx: &Ctx<'_>,
    models: &Models,
) -> Result<Response<Body>, ApiError> {
    let body: NewRule = parse_json(body_bytes(ctx.req))?;
    let trigger = parse_tag::<Trigger>(&body.trigger).ok_or_else(|| {
        let names: Vec<String> = Trigger::ALL
            .iter()
            .map(firmspace::store::item::tag_name)
            .collect();
        ApiError::bad_request(
            "invalid_trigger",
            format!("trigger must be one of {}", names.join(", ")),
        )
    })?;
    let action: Action = serde_json::from_value(body.action).map_err(|e| {
        ApiError::bad_request(
            "invalid_action",
            format!(
                "action must be create_task {{title}}, send_message {{integration_id, text}}, reply {{text}} or ai {{model, instructions, tools}}: {}",
                http::plain(&e.to_string())
            ),
        )
    })?;
    check_action(store, ctx, trigger, &action, models).await?;
    let by = Some(ctx.key.id.as_str());
    let rule = automation::create_rule_by(store, &ctx.org, (trigger, action), by, ctx.now).await?;
    Ok(json_response(
        201,
        &json!({"rule_id": rule.rule_id, "trigger": rule.trigger, "action": rule.action,
            "created_by": ctx.key.id}),
    ))
}

/// `GET /api/rules`: every rule, with who made it.
pub async fn rules(store: &Store, ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let items = automation::list_rules(store, &ctx.org).await?;
    Ok(json_response(200, &json!({ "items": items })))
}

/// `GET /api/rules/{rule_id}`.
pub async fn rule(store: &Store, ctx: &Ctx<'_>, id: &str) -> Result<Response<Body>, ApiError> {
    let rule = automation::read_rule(store, &ctx.org, id).await?;
    Ok(json_response(
        200,
        &rule.ok_or_else(|| ApiError::not_found("rule"))?,
    ))
}

pub async fn tasks(store: &Store, ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let items = automation::tasks(store, &ctx.org).await?;
    Ok(json_response(200, &json!({ "items": items })))
}
