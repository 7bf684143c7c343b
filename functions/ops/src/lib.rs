#![forbid(unsafe_code)]
//! `/ops/...`: the operator's view. An organisation's API key sees its own organisation; the
//! admin token sees every organisation (naming one with `org=`) and the deployment's queues.
//! `GET /ops/` is a page (static HTML, CSS and JavaScript served from here) that calls the JSON
//! routes with the key in a header: no cookie, so no cross-site request can act for anyone.

mod actions;
mod page;
mod views;

use chrono::{DateTime, Utc};
use firmspace::admin::{bearer, AdminToken};
use firmspace::config::{Config, ConfigError};
use firmspace::effects::queue::{Publisher, Queues as Consequences};
use firmspace::http::{query, ApiError};
use firmspace::ids::OrgId;
use firmspace::ops::consumers::Consumers;
use firmspace::ops::queues::Queues;
use firmspace::orgs::{Key, Scope};
use firmspace::store::Store;
use lambda_http::{Body, Request, Response};
use std::convert::Infallible;

pub struct App {
    store: Store,
    admin_token: AdminToken,
    /// The admin tokens' record names (keyed digests under `DIGEST_KEY_ID`).
    admin_names: firmspace::admin::Names,
    queues: Queues,
    publisher: Publisher,
    /// Reads and writes a key or the admin token may make a minute (`READS_PER_MINUTE`,
    /// `WRITES_PER_MINUTE`), counted before the work.
    limits: firmspace::orgs::rate::Limits,
    /// The workers the admin may pause (`WORKER_MAPPINGS`); none without it.
    consumers: Option<Consumers>,
    /// Where a recovery from a provider is handed (`RECOVERY_FUNCTION`): the function that
    /// opens the provider's key. None without it.
    recovery: Option<firmspace::ops::recover::Recovery>,
}

/// Who asks: the admin (by the token's public name, `admin:adm_…`), or one organisation's key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Who {
    Admin(String),
    Org(Key),
}

impl Who {
    /// Who resolved, who asked: the admin token's or the key's public name, never the secret.
    pub(crate) fn by(&self) -> String {
        match self {
            Self::Admin(id) => id.clone(),
            Self::Org(key) => key.id.clone(),
        }
    }

    /// 403 `forbidden` unless the caller may do what `scope` covers (the admin may do all).
    pub(crate) fn may(&self, scope: Scope) -> Result<(), ApiError> {
        match self {
            Self::Admin(_) => Ok(()),
            Self::Org(key) => key
                .may(scope)
                .map_err(|lacks| firmspace::commands::forbidden(lacks).into()),
        }
    }

    /// The organisation a request is about: the key's own, or the admin's `org=` (none: every
    /// organisation).
    pub(crate) fn scope(&self, req: &Request) -> Result<Option<OrgId>, ApiError> {
        match self {
            Self::Org(key) => Ok(Some(key.org.clone())),
            Self::Admin(_) => query(req, "org")
                .map(|raw| {
                    OrgId::parse(&raw).map_err(|_| {
                        ApiError::bad_request("invalid_org", "org is not an organisation id")
                    })
                })
                .transpose(),
        }
    }

    /// The one organisation a list is about: the admin must name it.
    pub(crate) fn one(&self, req: &Request) -> Result<OrgId, ApiError> {
        self.scope(req)?.ok_or_else(|| {
            ApiError::bad_request(
                "missing_org",
                "the admin token names an organisation with org=",
            )
        })
    }

    /// An item's organisation as an action may touch it: any for the admin.
    pub(crate) fn owner(&self) -> Option<&OrgId> {
        match self {
            Self::Admin(_) => None,
            Self::Org(key) => Some(&key.org),
        }
    }
}

impl App {
    pub fn new(
        store: Store,
        (admin_token, admin_names): (AdminToken, firmspace::admin::Names),
        queues: Queues,
        publisher: Publisher,
    ) -> Self {
        Self {
            store,
            admin_token,
            admin_names,
            queues,
            publisher,
            limits: firmspace::orgs::rate::Limits::default(),
            consumers: None,
            recovery: None,
        }
    }

    /// The same app pausing and resuming these workers.
    pub fn with_consumers(mut self, consumers: Consumers) -> Self {
        self.consumers = Some(consumers);
        self
    }

    /// The same app handing recoveries to `recovery`.
    pub fn with_recovery(mut self, recovery: firmspace::ops::recover::Recovery) -> Self {
        self.recovery = Some(recovery);
        self
    }

    /// The same app with other limits per key and minute.
    pub fn with_limits(mut self, limits: firmspace::orgs::rate::Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The queues' and DLQs' URLs (`{NAME}_QUEUE_URL`, `{NAME}_DLQ_URL`), the admin token and the
    /// workers' mappings (`WORKER_MAPPINGS`). A person's resend goes to the automation queue:
    /// this function opens no secret.
    pub async fn from_env() -> Result<Self, ConfigError> {
        let config = Config::from_env()?;
        let sqs = firmspace::aws::sqs(config.endpoint_url.as_deref()).await;
        let digests = config
            .digests()
            .await
            .ok_or(ConfigError::Missing("DIGEST_KEY_ID"))?;
        let app = Self::new(
            config.store().await,
            (
                AdminToken::from_env(&config).await?,
                firmspace::admin::Names::new(digests),
            ),
            Queues::from_env(sqs.clone())?,
            Publisher {
                sqs,
                queues: Consequences::from_env()?,
            },
        )
        .with_limits(firmspace::orgs::rate::Limits::from_env());
        let app = match firmspace::config::var("RECOVERY_FUNCTION") {
            Some(function) => app.with_recovery(firmspace::ops::recover::Recovery::Lambda {
                lambda: firmspace::aws::lambda(config.endpoint_url.as_deref()).await,
                function,
            }),
            None => app,
        };
        Ok(match firmspace::config::var("WORKER_MAPPINGS") {
            Some(raw) => app.with_consumers(Consumers {
                lambda: firmspace::aws::lambda(config.endpoint_url.as_deref()).await,
                list: firmspace::ops::consumers::parse(&raw),
            }),
            None => app,
        })
    }

    /// The schedule's turn: the deployment's figures as gauges (a bounded read).
    pub async fn gauges(&self) {
        let now = Utc::now();
        match views::figures(&self.store, None, now).await {
            Ok(figures) => views::gauges(&figures, now),
            Err(e) => tracing::error!(error.message = %e, "the figures could not be read"),
        }
        firmspace::telemetry::flush_metrics();
    }

    pub async fn handle(&self, req: Request) -> Result<Response<Body>, Infallible> {
        let response = self
            .respond(&req, Utc::now())
            .await
            .unwrap_or_else(ApiError::into_response);
        firmspace::telemetry::flush_metrics();
        Ok(response)
    }

    pub async fn respond(
        &self,
        req: &Request,
        now: DateTime<Utc>,
    ) -> Result<Response<Body>, ApiError> {
        if firmspace::http::body_bytes(req).len() > firmspace::http::MAX_BODY {
            return Err(ApiError::new(
                413,
                "payload_too_large",
                "body exceeds 256 KiB",
            ));
        }
        // Each segment percent-decoded, as the api reads its paths.
        let decoded = firmspace::http::segments(req);
        let segments: Vec<&str> = decoded.iter().map(String::as_str).collect();
        let method = req.method().as_str();
        if let Some(asset) = page::asset(method, &segments) {
            return Ok(asset);
        }
        let who = self.who(req).await?;
        who.may(match method {
            "GET" => Scope::Read,
            _ => Scope::Ops,
        })?;
        // Counted before the work: a key (or the admin token) over its limit gets 429 and costs
        // nothing more.
        let by = (who.owner(), format!("ops:{}", who.by()));
        let counted = self
            .limits
            .count(&self.store, (by.0, &by.1), method == "GET", now);
        ApiError::counted(counted.await?)?;
        self.route(&who, req, &segments, now).await
    }

    async fn route(
        &self,
        who: &Who,
        req: &Request,
        segments: &[&str],
        now: DateTime<Utc>,
    ) -> Result<Response<Body>, ApiError> {
        let method = req.method().as_str();
        // Each route's future on the heap: together they would make one very large future.
        match (method, segments) {
            ("GET", ["ops", "summary"]) => Box::pin(views::summary(self, who, req, now)).await,
            ("GET", ["ops", "orgs"]) => Box::pin(views::orgs(self, who, req)).await,
            ("GET", ["ops", "events"]) => Box::pin(views::events(self, who, req)).await,
            ("GET", ["ops", "review"]) => Box::pin(views::review(self, who, req)).await,
            ("GET", ["ops", "runs"]) => Box::pin(views::runs(self, who, req)).await,
            ("GET", ["ops", "chart"]) => Box::pin(views::chart(self, who, req, now)).await,
            ("GET", ["ops", "dlq", queue]) => Box::pin(views::dlq(self, who, req, queue)).await,
            ("GET", ["ops", "consumers"]) => Box::pin(views::consumers(self, who)).await,
            ("GET", ["ops", "integrations"]) => Box::pin(views::integrations(self, who, req)).await,
            ("POST", _) if views::takes(segments) == Some("POST") => {
                Box::pin(actions::dispatch(self, who, req, segments, now)).await
            }
            _ => match views::takes(segments) {
                Some(takes) => Err(ApiError::method_not_allowed(&[takes])),
                None => Err(ApiError::not_found("route")),
            },
        }
    }

    /// The admin token, or an organisation's API key; anything else is 401.
    async fn who(&self, req: &Request) -> Result<Who, ApiError> {
        let token = bearer(req).ok_or_else(|| {
            ApiError::unauthorized(
                "unauthorized",
                "Authorization: Bearer <api key or admin token> required",
            )
        })?;
        if token.starts_with("fsk_") {
            return firmspace::orgs::authenticate(&self.store, token)
                .await?
                .map(Who::Org)
                .ok_or_else(|| ApiError::unauthorized("unauthorized", "unknown API key"));
        }
        if self.admin_token.matches(token).await? {
            Ok(Who::Admin(self.admin_names.of(token).await?))
        } else {
            Err(ApiError::unauthorized(
                "unauthorized",
                "unknown API key or admin token",
            ))
        }
    }
}
