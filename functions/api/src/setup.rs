//! Organisations, integrations and team members.

use crate::Ctx;
use firmspace::config::Config;
use firmspace::effects::targets;
use firmspace::http::{body_bytes, json_response, parse_json, ApiError};
use firmspace::ids::IntegrationId;
use firmspace::orgs::{self, Integration, Member, Provider};
use firmspace::signature::{monobank, standard};
use firmspace::store::Store;
use lambda_http::{Body, Request, Response};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
struct NewOrg {
    name: String,
}

pub async fn create_org(
    store: &Store,
    req: &Request,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Response<Body>, ApiError> {
    let body: NewOrg = parse_json(body_bytes(req))?;
    let name = body.name.trim();
    if name.is_empty() || name.len() > 200 {
        return Err(ApiError::bad_request(
            "invalid_name",
            "name must be 1-200 characters",
        ));
    }
    let (org, key) = orgs::create_org(store, name, now).await?;
    Ok(json_response(
        201,
        &json!({"org_id": org.as_str(), "name": name, "api_key": key.expose_secret()}),
    ))
}

#[derive(Deserialize)]
struct NewIntegration {
    kind: String,
    provider: Option<String>,
    secret: Option<String>,
    public_key: Option<String>,
    url: Option<String>,
    status_url: Option<String>,
    token: Option<String>,
}

pub async fn create_integration(
    store: &Store,
    config: &Config,
    ctx: &Ctx<'_>,
) -> Result<Response<Body>, ApiError> {
    let body: NewIntegration = parse_json(body_bytes(ctx.req))?;
    let id = IntegrationId::generate(&ctx.org);
    let mut integration = Integration {
        id: id.clone(),
        kind: body.kind.clone(),
        provider: None,
        secret: None,
        public_key: None,
        url: None,
        status_url: None,
        token: None,
        key_fetched_at: None,
        created_at: ctx.now,
    };
    let answer = match body.kind.as_str() {
        "payments" => {
            let provider = body
                .provider
                .as_deref()
                .and_then(Provider::parse)
                .ok_or_else(|| {
                    ApiError::bad_request(
                        "invalid_provider",
                        "provider must be standard, stripe or monobank",
                    )
                })?;
            integration.provider = Some(provider);
            match provider {
                Provider::Standard | Provider::Stripe => {
                    let secret = body.secret.unwrap_or_else(standard::generate_secret);
                    let usable = match provider {
                        Provider::Standard => standard::sign(&secret, "probe", 0, b"").is_ok(),
                        _ => secret.len() >= 16,
                    };
                    if !secret.starts_with("whsec_") || !usable {
                        return Err(ApiError::bad_request(
                            "invalid_secret",
                            "secret must be whsec_ followed by base64 (standard) or at least 16 characters (stripe)",
                        ));
                    }
                    integration.secret = Some(SecretString::from(secret));
                }
                Provider::Monobank => {
                    let key = body.public_key.ok_or_else(|| {
                        ApiError::bad_request(
                            "missing_public_key",
                            "monobank needs public_key (base64 PEM from /api/merchant/pubkey)",
                        )
                    })?;
                    monobank::parse_public_key(&key).map_err(|_| {
                        ApiError::bad_request(
                            "invalid_public_key",
                            "public_key is not a base64 PEM P-256 key",
                        )
                    })?;
                    integration.public_key = Some(key);
                    integration.token = body.token.clone().map(SecretString::from);
                }
            }
            json!({
                "webhook_url": format!("{}/hooks/{}/payments", config.public_url, id.id),
                "provider": provider.as_str(),
                "signature": match provider {
                    Provider::Standard => "webhook-id, webhook-timestamp, webhook-signature (v1 HMAC-SHA256)",
                    Provider::Stripe => "Stripe-Signature (t=..., v1=HMAC-SHA256)",
                    Provider::Monobank => "X-Sign (ECDSA P-256 over the raw body)",
                },
            })
        }
        "outbound" => {
            let url = body.url.ok_or_else(|| {
                ApiError::bad_request("missing_url", "outbound integrations need url")
            })?;
            check_outbound_url(&url, config.allows_loopback())?;
            if let Some(status_url) = &body.status_url {
                check_outbound_url(status_url, config.allows_loopback())?;
            }
            integration.url = Some(url.clone());
            integration.status_url = body.status_url.clone();
            integration.secret = Some(SecretString::from(standard::generate_secret()));
            json!({
                "url": url,
                "status_url": body.status_url,
                "signature": "outgoing calls carry Idempotency-Key and Standard Webhooks signature headers",
            })
        }
        other => {
            return Err(ApiError::bad_request(
                "invalid_kind",
                format!("kind must be payments or outbound, not {other:?}"),
            ))
        }
    };
    orgs::create_integration(store, &integration).await?;
    let mut answer = answer;
    answer["integration_id"] = json!(id.id);
    answer["kind"] = json!(integration.kind);
    answer["secret"] = json!(integration
        .secret
        .as_ref()
        .map(|s| s.expose_secret().to_owned()));
    Ok(json_response(201, &answer))
}

/// An outbound URL must be https to a public host; loopback http only where the stage allows it.
fn check_outbound_url(raw: &str, allow_loopback: bool) -> Result<(), ApiError> {
    targets::check_url(raw, allow_loopback).map_err(|why| ApiError::bad_request("invalid_url", why))
}

#[derive(Deserialize)]
struct NewMember {
    user_id: String,
    name: String,
}

pub async fn add_member(store: &Store, ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let body: NewMember = parse_json(body_bytes(ctx.req))?;
    firmspace::ids::LocalId::parse("user_id", &body.user_id)
        .map_err(|e| ApiError::bad_request("invalid_user_id", e.to_string()))?;
    let member = Member {
        user_id: body.user_id,
        name: body.name,
    };
    let added = orgs::add_member(store, &ctx.org, &member, ctx.now).await?;
    Ok(json_response(
        if added { 201 } else { 200 },
        &json!({"user_id": member.user_id, "name": member.name, "duplicate": !added}),
    ))
}

pub async fn list_members(store: &Store, ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let members = orgs::members(store, &ctx.org).await?;
    let items: Vec<_> = members
        .iter()
        .map(|m| json!({"user_id": m.user_id, "name": m.name}))
        .collect();
    Ok(json_response(200, &json!({ "items": items })))
}
