#![forbid(unsafe_code)]
//! The CRM side of the event layer (`/api/...`): every route but `POST /api/orgs` takes
//! `Authorization: Bearer <organisation API key>` and sees only that organisation's items;
//! `GET /api/openapi.json` (the document of every route, from the table `routes` dispatches by)
//! takes none.

mod consequences;
mod invoices;
mod openapi;
mod routes;
mod schemas;
mod setup;

use chrono::{DateTime, Utc};
use firmspace::config::{self, Config, ConfigError};
use firmspace::http::{self, header, json_response, ApiError};
use firmspace::ids::OrgId;
use firmspace::store::Store;
use lambda_http::{Body, Request, Response};
use routes::{Found, Op, OrgOp};
use secrecy::{ExposeSecret, SecretString};
use serde_json::json;
use sha2::{Digest, Sha256};
use std::convert::Infallible;

/// What only the api function reads: who may create organisations, and the public base URL
/// that webhook URLs are built on.
#[derive(Clone, Debug)]
pub struct Settings {
    pub admin_token: SecretString,
    /// `PUBLIC_URL`: base of the public API URL, told to providers as their webhook URL.
    pub public_url: String,
    /// Loopback outbound targets are allowed (`local`/`test` stages only).
    pub allows_loopback: bool,
}

pub struct App {
    store: Store,
    settings: Settings,
}

/// One request, authenticated: who asks and when.
pub(crate) struct Ctx<'a> {
    pub req: &'a Request,
    pub now: DateTime<Utc>,
    pub org: OrgId,
}

impl App {
    pub fn new(store: Store, settings: Settings) -> Self {
        Self { store, settings }
    }

    pub async fn from_env() -> Result<Self, ConfigError> {
        let config = Config::from_env()?;
        let settings = Settings {
            admin_token: admin_token(&config).await?,
            public_url: config::var("PUBLIC_URL").unwrap_or_default(),
            allows_loopback: config.allows_loopback(),
        };
        Ok(Self::new(config.store().await, settings))
    }

    pub async fn handle(&self, req: Request) -> Result<Response<Body>, Infallible> {
        Ok(self
            .respond(&req, Utc::now())
            .await
            .unwrap_or_else(ApiError::into_response))
    }

    pub async fn respond(
        &self,
        req: &Request,
        now: DateTime<Utc>,
    ) -> Result<Response<Body>, ApiError> {
        let path = http::route_path(req).trim_end_matches('/');
        let segments: Vec<&str> = path.split('/').skip(1).collect();
        if segments.first() != Some(&"api") {
            // The gateway's `$default` route: whatever no function serves gets our JSON too.
            return Err(unrouted(req.method().as_str(), &segments));
        }
        let Some(found) = routes::find(req.method().as_str(), &segments) else {
            // An unknown route is told apart only to a caller with a valid key.
            self.authenticate(req).await?;
            let methods = routes::allowed(&segments);
            if methods.is_empty() {
                return Err(ApiError::not_found("route"));
            }
            return Err(ApiError::method_not_allowed(&methods));
        };
        match found.route.op {
            Op::OpenApi => openapi::response(),
            Op::CreateOrg => {
                self.require_admin(req)?;
                setup::create_org(&self.store, req, now).await
            }
            Op::Org(op) => {
                let ctx = Ctx {
                    req,
                    now,
                    org: self.authenticate(req).await?,
                };
                self.dispatch(op, &found, &ctx).await
            }
        }
    }

    async fn dispatch(
        &self,
        op: OrgOp,
        found: &Found<'_>,
        ctx: &Ctx<'_>,
    ) -> Result<Response<Body>, ApiError> {
        let store = &self.store;
        match op {
            OrgOp::CreateIntegration => setup::create_integration(store, &self.settings, ctx).await,
            OrgOp::AddMember => setup::add_member(store, ctx).await,
            OrgOp::ListMembers => setup::list_members(store, ctx).await,
            OrgOp::CreateInvoice => invoices::create(store, ctx).await,
            OrgOp::ListInvoices => invoices::list(store, ctx).await,
            OrgOp::ReadInvoice => invoices::read(store, ctx, found.param("id")).await,
            OrgOp::PayInvoice => invoices::pay(store, ctx, found.param("id")).await,
            OrgOp::DuplicateInvoice => invoices::duplicate(store, ctx, found.param("id")).await,
            OrgOp::Notifications => consequences::notifications(store, ctx).await,
            OrgOp::MarkRead => consequences::mark_read(store, ctx).await,
            OrgOp::ActivityLog => {
                let (kind, id) = (found.param("kind"), found.param("entity_id"));
                consequences::activity_log(store, ctx, kind, id).await
            }
            OrgOp::CreateRule => consequences::create_rule(store, ctx).await,
            OrgOp::Tasks => consequences::tasks(store, ctx).await,
            OrgOp::Review => {
                let items = firmspace::review::list(store, &ctx.org, 200).await?;
                Ok(json_response(200, &json!({ "items": items })))
            }
        }
    }

    fn require_admin(&self, req: &Request) -> Result<(), ApiError> {
        let expected = &self.settings.admin_token;
        let given = bearer(req).unwrap_or_default();
        // Compare digests, so the comparison's timing says nothing about the token.
        if Sha256::digest(given.as_bytes()) == Sha256::digest(expected.expose_secret().as_bytes()) {
            Ok(())
        } else {
            Err(ApiError::unauthorized(
                "unauthorized",
                "admin token required",
            ))
        }
    }

    async fn authenticate(&self, req: &Request) -> Result<OrgId, ApiError> {
        let key = bearer(req).ok_or_else(|| {
            ApiError::unauthorized("unauthorized", "Authorization: Bearer <api key> required")
        })?;
        firmspace::orgs::authenticate(&self.store, key)
            .await?
            .ok_or_else(|| ApiError::unauthorized("unauthorized", "unknown API key"))
    }
}

/// A request outside `/api` that reached us through the gateway's `$default` route: a webhook
/// URL called with another method than POST is a 405, anything else a 404.
fn unrouted(method: &str, segments: &[&str]) -> ApiError {
    match segments {
        ["hooks", _, _] if method != "POST" => ApiError::method_not_allowed(&["POST"]),
        _ => ApiError::not_found("route"),
    }
}

/// The admin token: read once at start from Secrets Manager (`ADMIN_TOKEN_SECRET_ARN`, as the
/// template deploys it). `ADMIN_TOKEN` is only for a function run by hand without the stack.
async fn admin_token(config: &Config) -> Result<SecretString, ConfigError> {
    const ARN: &str = "ADMIN_TOKEN_SECRET_ARN";
    let Some(arn) = config::var(ARN) else {
        return Ok(SecretString::from(config::require("ADMIN_TOKEN")?));
    };
    let sdk = firmspace::aws::sdk_config(config.endpoint_url.as_deref()).await;
    let out = aws_sdk_secretsmanager::Client::new(&sdk)
        .get_secret_value()
        .secret_id(&arn)
        .send()
        .await
        .map_err(|e| ConfigError::Invalid(ARN, format!("{arn} could not be read: {e}")))?;
    out.secret_string
        .map(SecretString::from)
        .ok_or_else(|| ConfigError::Invalid(ARN, format!("{arn} holds no string")))
}

fn bearer(req: &Request) -> Option<&str> {
    header(req, "authorization")?.strip_prefix("Bearer ")
}
