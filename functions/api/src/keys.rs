//! `/api/keys`: an organisation's API keys, made, listed and revoked by a key with the `ops`
//! scope. A key grants at most the scopes of the key that made it, so no key can make a
//! stronger one.

use crate::Ctx;
use firmspace::fields;
use firmspace::http::{body_bytes, json_response, parse_json, ApiError};
use firmspace::orgs::keys::{self, KeyInfo, Scope, Scopes, NAME_MAX};
use firmspace::store::Store;
use lambda_http::{Body, Response};
use secrecy::ExposeSecret;
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewKey {
    /// 1-100 characters: what the key is for.
    name: String,
    /// At least one of `read`, `write`, `ops`; none the asking key lacks.
    scopes: Vec<String>,
}

/// A new key: the only answer that ever holds `api_key`.
#[derive(Serialize, ToSchema)]
pub struct KeyCreated {
    key_id: String,
    /// Shown once; only its SHA-256 is stored.
    api_key: String,
    scopes: Vec<Scope>,
    name: String,
    created_at: String,
}

pub async fn create(store: &Store, ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let body: NewKey = parse_json(body_bytes(ctx.req))?;
    let name = fields::line("name", &body.name, NAME_MAX)?;
    let scopes = scopes(&body.scopes)?;
    if !ctx.key.scopes.covers(scopes) {
        return Err(ApiError::new(
            403,
            "forbidden",
            "a key grants only scopes the key that makes it has",
        ));
    }
    let Some((info, api_key)) =
        keys::create(store, &ctx.org, name, scopes, &ctx.key.id, ctx.now).await?
    else {
        return Err(ApiError::new(
            409,
            "too_many_keys",
            format!("an organisation holds at most {} keys", keys::KEYS_MAX),
        ));
    };
    Ok(json_response(
        201,
        &json!({
            "key_id": info.key_id,
            "api_key": api_key.expose_secret(),
            "scopes": info.scopes,
            "name": info.name,
            "created_at": info.created_at,
        }),
    ))
}

fn scopes(raw: &[String]) -> Result<Scopes, ApiError> {
    let parsed = raw
        .iter()
        .map(|s| Scope::parse(s))
        .collect::<Option<Vec<_>>>()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            ApiError::bad_request(
                "invalid_scopes",
                "scopes is a non-empty list of read, write and ops",
            )
        })?;
    Ok(Scopes::of(&parsed))
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
    let info = keys::revoke(store, &ctx.org, key_id, &ctx.key.id, ctx.now)
        .await?
        .ok_or_else(|| ApiError::not_found("key"))?;
    Ok(json_response(
        200,
        &serde_json::to_value(info).unwrap_or_default(),
    ))
}
