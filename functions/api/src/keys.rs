//! `/api/keys`: an organisation's API keys, made, listed and revoked by a key with the `ops`
//! scope. A key grants at most the scopes of the key that made it, so no key can make a
//! stronger one.

use crate::Ctx;
use firmspace::commands::RequestKey;
use firmspace::http::{body_bytes, json_response, parse_json, ApiError};
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

pub async fn create(store: &Store, ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let body: NewKey = parse_json(body_bytes(ctx.req))?;
    let command = firmspace::commands::records::CreateKey {
        name: body.name,
        scopes: body.scopes,
    };
    ctx.answer(store, RequestKey::None, command).await
}

pub async fn list(store: &Store, ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let items: Vec<KeyInfo> = keys::list(store, &ctx.org).await?;
    Ok(json_response(200, &json!({ "items": items })))
}

pub async fn revoke(
    store: &Store,
    ctx: &Ctx<'_>,
    key_id: &str,
) -> Result<Response<Body>, ApiError> {
    let command = firmspace::commands::records::RevokeKey {
        key_id: key_id.to_owned(),
    };
    ctx.answer(store, RequestKey::None, command).await
}
