//! Reads and settings of the consequence workers: notifications, activity logs, rules, tasks.

use crate::route::{
    doc, Answer, Asked, FromRoute, Method, Op, OrgOp, Route, CREATED, MALFORMED, OK,
};
use crate::Ctx;
use firmspace::commands::records;
use firmspace::effects::automation::{self};
use firmspace::effects::{activity, notify, EntityKind};
use firmspace::fields::{self, REF_MAX};
use firmspace::http::{json_response, query, typed_response, ApiError};
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
    // A member's user id, as `POST /api/members` takes it: anything else names no one.
    if firmspace::ids::LocalId::parse("recipient", recipient).is_err() {
        return Err(fields::FieldError {
            field: "recipient",
            reason: "must be a member's user id: 1-64 characters of A-Z a-z 0-9 _ - .".into(),
        }
        .into());
    }
    let items = notify::list(store, &ctx.org, recipient).await?;
    Ok(json_response(200, &json!({ "items": items })))
}

#[derive(Deserialize, ToSchema)]
pub struct MarkRead {
    #[schema(min_length = 1, max_length = 1020)]
    key: String,
}

impl FromRoute for records::MarkRead {
    const ROUTES: &'static [Route] = &[Route {
        method: Method::Post,
        path: "/api/notifications/read",
        op: Op::Org(OrgOp::MarkRead),
        summary: "Mark a notification read",
        params: &[],
        body: Some(doc::<MarkRead>),
        ok: OK,
        answer: Answer::Performed,
        errors: &[
            MALFORMED,
            (400, "`invalid_field` (`key`)"),
            (404, "`not_found`: no such notification"),
        ],
    }];

    async fn from_route(asked: &Asked<'_>) -> Result<Self, ApiError> {
        let key = asked.body::<MarkRead>()?.key;
        Ok(Self { key })
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
    // An id longer than any the CRM's entities have names none: not found, as any other id
    // in a path past its limit.
    if entity_id.len() > REF_MAX {
        return Err(ApiError::not_found("entity"));
    }
    let entity_id = fields::reference("entity_id", entity_id, REF_MAX)?;
    let items = activity::list(store, &ctx.org, entity_kind, entity_id).await?;
    Ok(json_response(200, &json!({ "items": items })))
}

#[derive(Deserialize, ToSchema)]
pub struct NewRule {
    #[schema(value_type = firmspace::effects::Trigger)]
    trigger: String,
    #[schema(value_type = firmspace::effects::automation::Action)]
    action: serde_json::Value,
}

impl FromRoute for records::CreateRule {
    const ROUTES: &'static [Route] = &[
            Route {
                method: Method::Post,
                path: "/api/rules",
                op: Op::Org(OrgOp::CreateRule),
                summary: "An automation rule: on a trigger, create a task or send a message",
                params: &[],
                body: Some(doc::<NewRule>),
                ok: CREATED,
                answer: Answer::Performed,
                errors: &[(
                    400,
                    "`malformed`, `invalid_trigger`, `invalid_action`, `model_not_allowed` (an ai \
                     step's model is not on the deployment's allow-list), `invalid_integration` \
                     (send_message needs an outbound integration of this organisation), `invalid_field` \
                     (`title`: 1-500 characters, `text`: 1-4000)",
                )],
            },
    ];

    async fn from_route(asked: &Asked<'_>) -> Result<Self, ApiError> {
        let body: NewRule = asked.body()?;
        Ok(Self {
            trigger: body.trigger,
            action: body.action,
        })
    }
}

/// `GET /api/rules`: every rule, with who made it.
pub async fn rules(store: &Store, ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let items = automation::list_rules(store, &ctx.org).await?;
    Ok(json_response(200, &json!({ "items": items })))
}

/// `GET /api/rules/{rule_id}`.
pub async fn rule(store: &Store, ctx: &Ctx<'_>, id: &str) -> Result<Response<Body>, ApiError> {
    let rule = automation::read_rule(store, &ctx.org, id).await?;
    let rule = rule.ok_or_else(|| ApiError::not_found("rule"))?;
    Ok(typed_response(200, &rule))
}

pub async fn tasks(store: &Store, ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let items = automation::tasks(store, &ctx.org).await?;
    Ok(json_response(200, &json!({ "items": items })))
}
