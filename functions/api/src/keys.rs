//! `/api/keys`: an organisation's API keys, made, listed and revoked by a key with the `ops`
//! scope. A key grants at most the scopes of the key that made it, so no key can make a
//! stronger one.

use crate::route::{Asked, FromRoute};
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
    async fn from_route(asked: &Asked<'_>) -> Result<Self, ApiError> {
        Ok(Self {
            key_id: asked.param("key_id").to_owned(),
        })
    }
}
