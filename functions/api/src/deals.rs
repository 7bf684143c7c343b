//! The board: a stage's cards a page at a time, and a card moved once per `Idempotency-Key`.

use crate::route::{
    doc, path, Answer, Asked, FromRoute, Method, Op, OrgOp, Route, IDEMPOTENCY_KEY,
};
use crate::Ctx;
use firmspace::commands::crm::MoveDeal;
use firmspace::deals::{self, Stage};
use firmspace::http::{page_response, query, ApiError};
use firmspace::store::Store;
use lambda_http::{Body, Response};
use serde::Deserialize;
use utoipa::ToSchema;

fn stage(raw: &str) -> Result<Stage, ApiError> {
    Stage::parse(raw).ok_or_else(|| {
        ApiError::bad_request("invalid_stage", "stage is new, qualified, won or lost")
    })
}

/// `GET /api/deals?stage=new&limit=&cursor=`: newest first; `stage` defaults to `new`.
pub async fn list(store: &Store, ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let stage = stage(query(ctx.req, "stage").as_deref().unwrap_or("new"))?;
    let limit = crate::paging::limit(ctx.req, 50, 200)?;
    let cursor = query(ctx.req, "cursor");
    let (cards, next) = deals::page(store, &ctx.org, stage, limit, cursor.as_deref())
        .await
        .map_err(|e| crate::paging::read_error(e, cursor.as_deref()))?;
    let items = cards.iter().map(deals::Deal::view).collect();
    Ok(page_response(items, next))
}

/// `POST /api/deals/{id}/stage`.
#[derive(Deserialize, ToSchema)]
pub struct NewStage {
    /// `new`, `qualified`, `won` or `lost`.
    #[schema(value_type = firmspace::deals::Stage)]
    stage: String,
}

/// Moves a card: once per `Idempotency-Key` (the same key again gets the stored answer); a card
/// on that stage already is answered with `moved: false`.
impl FromRoute for MoveDeal {
    const ROUTES: &'static [Route] = &[Route {
        method: Method::Post,
        path: "/api/deals/{id}/stage",
        op: Op::Org(OrgOp::MoveDeal),
        summary: "Move a card to another stage, once per `Idempotency-Key`",
        params: &[path("id", "the deal's id (`dl_...`)"), IDEMPOTENCY_KEY],
        body: Some(doc::<NewStage>),
        ok: &[(
            200,
            "moved (`moved: true`, `from`), or on that stage already (`moved: false`); the same \
                     key again gets the same answer",
        )],
        answer: Answer::Performed,
        errors: &[
            (
                400,
                "`missing_idempotency_key`, `malformed`, `invalid_stage`",
            ),
            (404, "`not_found`: no such deal in this organisation"),
            (409, "`idempotency_key_reused`"),
        ],
    }];

    async fn from_route(asked: &Asked<'_>) -> Result<Self, ApiError> {
        Ok(Self {
            deal_id: asked.param("id").to_owned(),
            stage: stage(&asked.body::<NewStage>()?.stage)?,
        })
    }
}
