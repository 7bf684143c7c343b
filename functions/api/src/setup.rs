//! Organisations, integrations and team members.

use crate::route::{
    doc, path, Answer, Asked, FromRoute, Method, Op, OrgOp, Route, CREATED, IDEMPOTENCY_KEY,
};
use crate::Ctx;
use firmspace::commands::answers::{Member, OrgCreated};
use firmspace::commands::operate::RotateSecrets;
use firmspace::commands::records::AddMember;
use firmspace::commands::setup::CreateIntegration;
use firmspace::commands::setup::NewIntegration;
use firmspace::commands::Rotation;
use firmspace::fields::{self, NAME_MAX, SECRET_MAX};
use firmspace::http::{body_bytes, json_response, parse_json, typed_response, ApiError};
use firmspace::ids::IntegrationId;
use firmspace::ids::OrgId;
use firmspace::integrations::rotation::{self, SecretsState};
use firmspace::integrations::{Integration, IntegrationKind, Settings};
use firmspace::orgs::{self};
use firmspace::payments::providers::PaymentSettings;
use firmspace::signature::standard;
use firmspace::store::item::Read;
use firmspace::store::Store;
use lambda_http::{Body, Request, Response};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

#[derive(Deserialize, ToSchema)]
pub struct NewOrg {
    name: String,
}

pub async fn create_org(
    store: &Store,
    req: &Request,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Response<Body>, ApiError> {
    let body: NewOrg = parse_json(body_bytes(req))?;
    let name = fields::name("name", &body.name, NAME_MAX)?;
    let (org, key) = orgs::create_org(store, name, now).await?;
    let answer = OrgCreated {
        org_id: org.as_str().to_owned(),
        name: name.to_owned(),
        api_key: key.expose_secret().to_owned(),
    };
    Ok(typed_response(201, &answer))
}

impl FromRoute for CreateIntegration {
    const ROUTES: &'static [Route] = &[
            Route {
                method: Method::Post,
                path: "/api/integrations",
                op: Op::Org(OrgOp::CreateIntegration),
                summary: "Register a payments provider's webhook or an outbound target",
                params: &[],
                body: Some(doc::<NewIntegration>),
                ok: CREATED,
                answer: Answer::Performed,
                errors: &[(
                    400,
                    "`malformed`, `invalid_provider`, `invalid_secret`, `missing_public_key`, \
                     `invalid_public_key`, `missing_url`, `invalid_url`, `invalid_field` (a text over its \
                     limit; the answer's `field` names it)",
                )],
            },
    ];

    async fn from_route(asked: &Asked<'_>) -> Result<Self, ApiError> {
        let new: NewIntegration = asked.body()?;
        Ok(Self(Box::new(new)))
    }
}

/// The organisation's integration `raw` read with its secrets left sealed, or 404.
async fn sealed_integration(
    store: &Store,
    org: &OrgId,
    raw: &str,
) -> Result<(Integration, firmspace::store::Item), ApiError> {
    let id = IntegrationId::parse(raw)
        .ok()
        .filter(|id| id.org == *org)
        .ok_or_else(|| ApiError::not_found("integration"))?;
    rotation::sealed(store, &id)
        .await?
        .ok_or_else(|| ApiError::not_found("integration"))
}

/// `GET /api/integrations/{id}`: what it is and which secrets it holds, never their values.
pub async fn read_integration(
    store: &Store,
    ctx: &Ctx<'_>,
    raw: &str,
) -> Result<Response<Body>, ApiError> {
    let (integration, item) = sealed_integration(store, &ctx.org, raw).await?;
    let info = IntegrationInfo {
        integration_id: integration.id.id.to_string(),
        kind: integration.kind(),
        provider: item.opt_str("provider").map(str::to_owned),
        created_at: firmspace::time::format(integration.created_at),
        created_by: item.opt_str("created_by").map(str::to_owned),
        secrets: SecretsState::of(&integration, &item, ctx.now),
    };
    Ok(typed_response(200, &info))
}

/// An integration as stored, without its secrets.
#[derive(Serialize, ToSchema)]
pub struct IntegrationInfo {
    integration_id: String,
    kind: IntegrationKind,
    provider: Option<String>,
    created_at: String,
    /// The key's id (or the admin's name) that created it.
    created_by: Option<String>,
    secrets: SecretsState,
}

/// `POST /api/integrations/{id}/secrets`: every secret the integration holds, by name, and how
/// long the previous ones still verify (`overlap_hours`, 0 to 168, default 24).
#[derive(Deserialize, ToSchema)]
pub struct NewSecrets {
    /// The new values by the names the integration lists (`GET /api/integrations/{id}`:
    /// `secrets.names`), each 1 to 256 visible ASCII characters; a Standard Webhooks `secret` is
    /// `whsec_` and the base64 of 24 to 64 bytes.
    #[schema(value_type = Object)]
    secrets: std::collections::BTreeMap<String, String>,
    #[schema(maximum = 168)]
    overlap_hours: Option<u32>,
}

/// The longest overlap, in hours (`rotation::MAX_OVERLAP`).
const OVERLAP_HOURS_MAX: u32 = 168;

/// Rotates an integration's secrets once per `Idempotency-Key`: the same key again gets the
/// stored answer (which names the secrets, never their values).
impl FromRoute for RotateSecrets {
    const ROUTES: &'static [Route] = &[
            Route {
                method: Method::Post,
                path: "/api/integrations/{id}/secrets",
                op: Op::Org(OrgOp::RotateSecrets),
                summary: "Rotate an integration's secrets: the new ones verify at once, the previous ones \
                          too until the overlap ends (default 24 h), then they are removed; \
                          `Idempotency-Key`, `ops` scope",
                params: &[path("id", "the integration's id"), IDEMPOTENCY_KEY],
                body: Some(doc::<NewSecrets>),
                ok: &[(200, "rotated; the same key again gets the same answer")],
                answer: Answer::Performed,
                errors: &[
                    (
                        400,
                        "`missing_idempotency_key`, `malformed`, `invalid_field` (`overlap_hours`: 0 to \
                         168; `secrets`: 1 to 256 visible ASCII characters), `invalid_secrets` (not \
                         exactly the names the integration holds), `invalid_secret`",
                    ),
                    (404, "`not_found`: no such integration in this organisation"),
                    (
                        409,
                        "`no_secrets`, `rotation_in_progress`, `idempotency_key_reused`",
                    ),
                ],
            },
    ];

    async fn from_route(asked: &Asked<'_>) -> Result<Self, ApiError> {
        let body: NewSecrets = asked.body()?;
        let overlap = match body.overlap_hours {
            None => rotation::DEFAULT_OVERLAP,
            Some(h) if h <= OVERLAP_HOURS_MAX => chrono::Duration::hours(h.into()),
            Some(_) => {
                return Err(ApiError {
                    field: Some("overlap_hours"),
                    ..ApiError::bad_request("invalid_field", "overlap_hours is 0 to 168")
                })
            }
        };
        let (integration, _) =
            sealed_integration(asked.store, asked.org, asked.param("id")).await?;
        let mut secrets = std::collections::HashMap::new();
        for (name, value) in &body.secrets {
            fields::secret("secrets", value, SECRET_MAX)?;
            rotated_secret_usable(&integration.settings, name, value)?;
            secrets.insert(name.clone(), SecretString::from(value.clone()));
        }
        Ok(Self {
            id: integration.id,
            rotation: Rotation { secrets, overlap },
        })
    }
}

/// A new value for a Standard Webhooks or Stripe signing `secret` must be usable as one, as at
/// creation (a Stripe `api_key` is checked by the command); other secrets are taken as given.
fn rotated_secret_usable(settings: &Settings, name: &str, value: &str) -> Result<(), ApiError> {
    let stripe =
        matches!(settings, Settings::Payments(PaymentSettings::Stripe { .. })) && name == "secret";
    let standard = name == "secret" && !stripe;
    let usable = match (stripe, standard) {
        (true, _) => value.starts_with("whsec_") && value.len() >= 16,
        (false, true) => value.starts_with("whsec_") && standard::Verifier::new(value).is_ok(),
        (false, false) => true,
    };
    if usable {
        Ok(())
    } else {
        Err(ApiError::bad_request(
            "invalid_secret",
            "secret must be whsec_ followed by the base64 of 24 to 64 bytes (standard) or whsec_ and at least 10 more characters (stripe)",
        ))
    }
}

#[derive(Deserialize, ToSchema)]
pub struct NewMember {
    #[schema(pattern = "^[A-Za-z0-9_.-]{1,64}$")]
    user_id: String,
    #[schema(min_length = 1, max_length = 200)]
    name: String,
}

impl FromRoute for AddMember {
    const ROUTES: &'static [Route] = &[Route {
        method: Method::Post,
        path: "/api/members",
        op: Op::Org(OrgOp::AddMember),
        summary: "Add a team member",
        params: &[],
        body: Some(doc::<NewMember>),
        ok: &[
            (201, "added"),
            (200, "already a member (`duplicate: true`)"),
        ],
        answer: Answer::Performed,
        errors: &[(
            400,
            "`malformed`, `invalid_user_id`, `invalid_field` (`name`)",
        )],
    }];

    async fn from_route(asked: &Asked<'_>) -> Result<Self, ApiError> {
        let body: NewMember = asked.body()?;
        Ok(Self {
            user_id: body.user_id,
            name: body.name,
        })
    }
}

pub async fn list_members(store: &Store, ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let members = orgs::members(store, &ctx.org).await?;
    let items: Vec<_> = members
        .iter()
        .map(|m| Member {
            user_id: m.user_id.clone(),
            name: m.name.clone(),
        })
        .collect();
    Ok(json_response(200, &json!({ "items": items })))
}
