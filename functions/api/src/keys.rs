//! `/api/keys`: an organisation's API keys, made, listed and revoked by a key with the `ops`
//! scope. A key grants at most the scopes of the key that made it, so no key can make a
//! stronger one.

use crate::route::{doc, Answer, Asked, FromRoute, In, Method, Op, OrgOp, Param, Route};
use crate::Ctx;
use firmspace::commands::records::{CreateKey, RevokeKey};
use firmspace::http::{json_response, ApiError};
use firmspace::orgs::keys::{self, KeyInfo};
use firmspace::store::Store;
use lambda_http::{Body, Response};
use serde::Deserialize;
use serde_json::json;
use utoipa::ToSchema;

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewKey {
    /// 1-100 characters: what the key is for.
    #[schema(min_length = 1, max_length = 100)]
    name: String,
    /// At least one of `read`, `write`, `ops`; none the asking key lacks (read as text, so an
    /// unknown one is `400 invalid_scopes`, not a parse error).
    #[schema(value_type = Vec<firmspace::orgs::Scope>, min_items = 1)]
    scopes: Vec<String>,
}

impl FromRoute for CreateKey {
    const ROUTES: &'static [Route] = &[Route {
        method: Method::Post,
        path: "/api/keys",
        op: Op::Org(OrgOp::CreateKey),
        summary: "Make an API key with some scopes (shown once); `ops` scope",
        params: &[],
        body: Some(doc::<NewKey>),
        ok: &[(201, "created; `api_key` is never shown again")],
        answer: Answer::Performed,
        errors: &[
            (
                400,
                "`malformed`, `invalid_field` (`name`: 1-100 characters), `invalid_scopes` \
                         (not a non-empty list of `read`, `write`, `ops`)",
            ),
            (
                403,
                "`forbidden`: a scope the asking key does not have itself",
            ),
            (409, "`too_many_keys`: the organisation holds 100 keys"),
        ],
    }];

    async fn from_route(asked: &Asked<'_>) -> Result<Self, ApiError> {
        let body: NewKey = asked.body()?;
        Ok(Self {
            name: body.name,
            scopes: body.scopes,
        })
    }
}

pub async fn list(store: &Store, ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let items: Vec<KeyInfo> = keys::list(store, &ctx.org).await?;
    Ok(json_response(200, &json!({ "items": items })))
}

impl FromRoute for RevokeKey {
    const ROUTES: &'static [Route] = &[Route {
        method: Method::Delete,
        path: "/api/keys/{key_id}",
        op: Op::Org(OrgOp::RevokeKey),
        summary: "Revoke a key: it authenticates nothing from now on; `ops` scope",
        params: &[Param {
            name: "key_id",
            at: In::Path,
            required: true,
            doc: "the key's public name (`key_...`)",
        }],
        body: None,
        ok: &[(200, "revoked, or already revoked (the same answer)")],
        answer: Answer::Performed,
        errors: &[(404, "`not_found`: no such key in this organisation")],
    }];

    async fn from_route(asked: &Asked<'_>) -> Result<Self, ApiError> {
        Ok(Self {
            key_id: asked.param("key_id").to_owned(),
        })
    }
}
