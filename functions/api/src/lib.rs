#![forbid(unsafe_code)]
//! The CRM side of the event layer (`/api/...`): every route but `POST /api/orgs` takes
//! `Authorization: Bearer <organisation API key>` and sees only that organisation's items;
//! `GET /api/openapi.json` (the document of every route, from the table `routes` dispatches by)
//! takes none.

pub mod assistant;
mod bank;
mod calls;
mod consequences;
mod credit_notes;
mod deals;
mod invoices;
mod keys;
mod ledger;
mod messages;
pub mod openapi;
mod paging;
pub mod route;
pub mod routes;
mod schemas;
mod setup;

use chrono::{DateTime, Utc};
use firmspace::commands::{perform, Actor, Env, Once, Performed, RequestKey, Stored};
use firmspace::commands::{setup::Site, statements::Imports};
use firmspace::config::{self, Config, ConfigError};
use firmspace::http::{self, json_response, ApiError};
use firmspace::ids::OrgId;
use firmspace::orgs::Key;
use firmspace::store::Store;
use lambda_http::{Body, Request, Response};
use routes::{Found, Op, OrgOp};
use serde_json::json;
use std::convert::Infallible;

/// What only the api function reads: who may create organisations, and the public base URL
/// that webhook URLs are built on.
#[derive(Debug)]
pub struct Settings {
    pub admin_token: AdminToken,
    /// `PUBLIC_URL`: base of the public API URL, told to providers as their webhook URL.
    pub public_url: String,
    /// Loopback outbound targets are allowed (`local`/`test` stages only).
    pub allows_loopback: bool,
    /// The attachments bucket, for presigned URLs (`ATTACHMENTS_BUCKET`); without it attachments
    /// are listed without a URL.
    pub files: Option<firmspace::messages::media::Files>,
    /// Where "import now" requests go (`IMPORT_QUEUE_URL`) and a large file's steps
    /// (`FILE_QUEUE_URL`, required beside it); without them the routes answer 503.
    pub imports: Option<firmspace::bank::import::Requests>,
    /// Requests a key may make a minute (`READS_PER_MINUTE`, 300; `WRITES_PER_MINUTE`, 120).
    pub limits: firmspace::orgs::rate::Limits,
    /// Where CSV files of more than 5,000 rows wait for the import worker (the attachments
    /// bucket, `imports/`); without it such a file is 503.
    pub uploads: Option<firmspace::bank::files::Bucket>,
    /// `AI_MODELS`: the models a rule's AI step may name.
    pub ai_models: firmspace::commands::model::Models,
}

pub struct App {
    store: Store,
    settings: Settings,
    site: Site,
    /// What the requests that store events cost, per organisation (`store::spent`).
    spent: firmspace::store::spent::Spent,
}

/// One request, authenticated: who asks and when.
pub(crate) struct Ctx<'a> {
    pub req: &'a Request,
    pub now: DateTime<Utc>,
    pub org: OrgId,
    /// The authenticated key: its public name (`orgs::key_id`) says who acts.
    pub key: Key,
    /// A command's reply is stored with its call; the api sends none itself.
    pub replies: Stored,
    /// The public base URL integrations are told, and what the stage allows.
    pub site: &'a Site,
    /// Large files' bucket and the import queue.
    pub imports: Imports<'a>,
}

impl Ctx<'_> {
    /// What a command performed on this request needs besides its input.
    pub(crate) fn env<'s>(&'s self, store: &'s Store) -> Env<'s, Stored> {
        Env {
            store,
            now: self.now,
            replies: &self.replies,
            publisher: None,
            site: Some(self.site),
            imports: self.imports,
            deployment: Default::default(),
            request: None,
        }
    }
}

/// A route's command performed as the request's key (`route::Performs`; every route's write
/// goes through here): its `Idempotency-Key` when the command needs one (`Once::needs_key`; an
/// effect keyed by it, `Once::ByEffect`, takes what an external id may be), the command read
/// from the request, performed with its route and body as what it asked, and answered as it
/// was done, what it spent on carried along (`route::Spending`).
struct Performing<'a, 'c> {
    op: OrgOp,
    ctx: &'a Ctx<'c>,
    store: &'a Store,
    params: &'a [(&'static str, &'a str)],
}

impl route::Performs for Performing<'_, '_> {
    async fn perform<C: route::FromRoute>(&self) -> Result<Response<Body>, ApiError> {
        let req = self.ctx.req;
        let key = match C::ONCE {
            Once::ByEffect => RequestKey::Header(invoices::idempotency_key(req)?.as_str().into()),
            once if once.needs_key() => RequestKey::Header(http::idempotency_key(req)?),
            _ => RequestKey::None,
        };
        let asked = route::Asked {
            op: self.op,
            req,
            store: self.store,
            org: &self.ctx.org,
            params: self.params,
        };
        let command = C::from_route(&asked).await?;
        let by = Actor::Key(self.ctx.key.clone());
        let route = [http::route_path(req).as_bytes(), http::body_bytes(req)];
        let done = perform(&self.ctx.env(self.store), &by, &key, command, &route).await?;
        let mut response = http::performed_response(&done);
        if let (Some(kind), true) = (C::SPENDS, done.outcome().is_made()) {
            let stored = match &done {
                Performed::Now { repeat, answer, .. } => !repeat && C::stored_now(answer),
                Performed::Again(_) => false,
            };
            let org = self.ctx.org.clone();
            let spending = route::Spending { org, kind, stored };
            response.extensions_mut().insert(spending);
        }
        Ok(response)
    }
}

impl App {
    pub fn new(store: Store, settings: Settings) -> Self {
        let (url, models) = (&settings.public_url, settings.ai_models.clone());
        let site = Site::new(url, settings.allows_loopback, models);
        Self {
            store,
            settings,
            site,
            spent: Default::default(),
        }
    }

    pub async fn from_env() -> Result<Self, ConfigError> {
        let config = Config::from_env()?;
        let endpoint = config.endpoint_url.as_deref();
        let sdk = firmspace::aws::sdk_config(endpoint).await;
        let s3 = firmspace::aws::s3(&sdk, endpoint.is_some());
        let settings = Settings {
            admin_token: AdminToken::from_env(&config).await?,
            public_url: config::var("PUBLIC_URL").unwrap_or_default(),
            allows_loopback: config.allows_loopback(),
            files: config::var("ATTACHMENTS_BUCKET")
                .map(|bucket| firmspace::messages::media::Files::new(s3.clone(), bucket)),
            uploads: config::var("ATTACHMENTS_BUCKET").map(|name| firmspace::bank::files::Bucket {
                s3: s3.clone(),
                name,
            }),
            imports: match config::var("IMPORT_QUEUE_URL") {
                Some(queue_url) => Some(firmspace::bank::import::Requests {
                    sqs: firmspace::aws::sqs(config.endpoint_url.as_deref()).await,
                    queue_url,
                    files_queue_url: config::require("FILE_QUEUE_URL")?,
                }),
                None => None,
            },
            limits: firmspace::orgs::rate::Limits::from_env(),
            ai_models: firmspace::commands::model::Models::from_env(),
        };
        Ok(Self::new(config.store().await, settings))
    }

    pub async fn handle(&self, req: Request) -> Result<Response<Body>, Infallible> {
        let now = Utc::now();
        let response = self
            .respond(&req, now)
            .await
            .unwrap_or_else(ApiError::into_response);
        self.spent(&response, now).await;
        firmspace::telemetry::flush_metrics();
        Ok(response)
    }

    /// What a request that stores an event (a call, a manual payment, a CSV file's rows, a
    /// top-up) cost is its organisation's events' of that kind (`store::spent`; its command
    /// says which, `route::Spending`), written at most once per 10 s after one stored
    /// something; every other request's is let go.
    async fn spent(&self, response: &Response<Body>, now: DateTime<Utc>) {
        let Some(spending) = response.extensions().get::<route::Spending>() else {
            let _ = self.store.metered();
            return;
        };
        let about = [(spending.org.clone(), spending.kind)];
        self.spent.invocation(&self.store, 0, &about, now);
        if spending.stored {
            self.spent.flush_due(&self.store).await;
        }
    }

    pub async fn respond(
        &self,
        req: &Request,
        now: DateTime<Utc>,
    ) -> Result<Response<Body>, ApiError> {
        within_size(req)?;
        let decoded = http::segments(req);
        let segments: Vec<&str> = decoded.iter().map(String::as_str).collect();
        if segments.first() != Some(&"api") {
            // The gateway's `$default` route: whatever no function serves gets our JSON too.
            return Err(unrouted(req.method().as_str(), &segments));
        }
        // An id longer than any we hand out names nothing (and would not fit a key): measured
        // as a key spells it, where a `%` or `#` takes three bytes.
        if segments
            .iter()
            .any(|s| firmspace::ids::key_part(s).len() > PATH_ID_MAX)
        {
            return Err(ApiError::not_found("route"));
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
                self.require_admin(req).await?;
                // Counted as the admin's write, every admin token one budget, before the work.
                let limits = &self.settings.limits;
                let counted = limits.count(&self.store, (None, ADMIN_BUDGET), false, now);
                ApiError::counted(counted.await?)?;
                setup::create_org(&self.store, req, now).await
            }
            Op::Org(op) => self.as_key(req, now, &found, op).await,
        }
    }

    /// A route behind an organisation key: its scopes, then the route with the key's context; a
    /// read is counted once answered (a refused one writes nothing; over the limit it is 429).
    async fn as_key(
        &self,
        req: &Request,
        now: DateTime<Utc>,
        found: &Found<'_>,
        op: OrgOp,
    ) -> Result<Response<Body>, ApiError> {
        let key = self.authenticate(req).await?;
        let scopes = found.route.scopes();
        if let Some(lacks) = scopes.iter().find_map(|s| key.may(*s).err()) {
            return Err(firmspace::commands::forbidden(lacks).into());
        }
        let (uploads, requests) = (
            self.settings.uploads.as_ref(),
            self.settings.imports.as_ref(),
        );
        let ctx = Ctx {
            req,
            now,
            org: key.org.clone(),
            key,
            replies: Stored,
            site: &self.site,
            imports: Imports { uploads, requests },
        };
        // Counted before the work: a key over its limit gets 429 and costs nothing more.
        let reads = found.route.reads();
        let by = (Some(&ctx.key.org), ctx.key.id.as_str());
        let limits = &self.settings.limits;
        ApiError::counted(limits.count(&self.store, by, reads, now).await?)?;
        self.dispatch(op, found, &ctx).await
    }

    async fn dispatch(
        &self,
        op: OrgOp,
        found: &Found<'_>,
        ctx: &Ctx<'_>,
    ) -> Result<Response<Body>, ApiError> {
        let performing = Performing {
            op,
            ctx,
            store: &self.store,
            params: found.params(),
        };
        if let Some(answer) = op.perform(&performing).await {
            return answer;
        }
        match self.money(op, found, ctx).await {
            Some(answer) => answer,
            None => self.crm(op, found, ctx).await,
        }
    }

    /// The routes that move or show money: invoices, credit notes, the ledger, the bank.
    async fn money(
        &self,
        op: OrgOp,
        found: &Found<'_>,
        ctx: &Ctx<'_>,
    ) -> Option<Result<Response<Body>, ApiError>> {
        let (store, id) = (&self.store, found.param("id"));
        Some(match op {
            OrgOp::ListInvoices => invoices::list(store, ctx).await,
            OrgOp::ReadInvoice => invoices::read(store, ctx, id).await,
            OrgOp::FileImport => bank::file_import(store, ctx, id).await,
            OrgOp::BankTransactions => bank::list(store, ctx).await,
            OrgOp::Wallet => ledger::wallet(store, ctx).await,
            OrgOp::Ledger => ledger::ledger_json(store, ctx).await,
            OrgOp::LedgerCsv => ledger::ledger_csv(store, ctx).await,
            OrgOp::Inbox => ledger::inbox(store, ctx).await,
            _ => return None,
        })
    }

    /// Everything else: the organisation, its people and records, messages, calls, the board,
    /// automation, review, keys and the assistant.
    async fn crm(
        &self,
        op: OrgOp,
        found: &Found<'_>,
        ctx: &Ctx<'_>,
    ) -> Result<Response<Body>, ApiError> {
        let (store, id) = (&self.store, found.param("id"));
        match op {
            OrgOp::ReadIntegration => setup::read_integration(store, ctx, id).await,
            OrgOp::ListMembers => setup::list_members(store, ctx).await,
            OrgOp::ListDeals => deals::list(store, ctx).await,
            OrgOp::AssistantTools => Ok(assistant::tools()),
            OrgOp::AssistantCall => assistant::call(store, ctx).await,
            OrgOp::AskRequest => assistant::ask(store, ctx, found.param("key"), false).await,
            OrgOp::AskCall => assistant::ask(store, ctx, found.param("call_id"), true).await,
            OrgOp::Notifications => consequences::notifications(store, ctx).await,
            OrgOp::ActivityLog => {
                let (kind, entity) = (found.param("kind"), found.param("entity_id"));
                consequences::activity_log(store, ctx, kind, entity).await
            }
            OrgOp::Tasks => consequences::tasks(store, ctx).await,
            OrgOp::ListRules => consequences::rules(store, ctx).await,
            OrgOp::ReadRule => consequences::rule(store, ctx, found.param("rule_id")).await,
            OrgOp::ListCalls => calls::list(store, ctx).await,
            OrgOp::ListContacts => calls::list_contacts(store, ctx).await,
            OrgOp::ListConversations => messages::list(store, ctx).await,
            OrgOp::ConversationMessages => {
                let files = self.settings.files.as_ref();
                messages::list_messages(store, files, ctx, id).await
            }
            OrgOp::ListKeys => keys::list(store, ctx).await,
            OrgOp::Review => {
                let items = firmspace::review::list(store, &ctx.org, 200).await?;
                Ok(json_response(200, &json!({ "items": items })))
            }
            // The money routes are `money`'s.
            _ => Err(ApiError::not_found("route")),
        }
    }

    async fn require_admin(&self, req: &Request) -> Result<(), ApiError> {
        let given = bearer(req).unwrap_or_default();
        if self.settings.admin_token.matches(given).await? {
            Ok(())
        } else {
            Err(ApiError::unauthorized(
                "unauthorized",
                "admin token required",
            ))
        }
    }

    /// The key, with its organisation, public name and scopes.
    async fn authenticate(&self, req: &Request) -> Result<Key, ApiError> {
        let key = bearer(req).ok_or_else(|| {
            ApiError::unauthorized("unauthorized", "Authorization: Bearer <api key> required")
        })?;
        firmspace::orgs::authenticate(&self.store, key)
            .await?
            .ok_or_else(|| ApiError::unauthorized("unauthorized", "unknown API key"))
    }
}

/// 413 for a body over its limit: 256 KiB, but 5 MiB for a bank's CSV file (its route checks
/// that limit itself).
fn within_size(req: &Request) -> Result<(), ApiError> {
    let limit = match http::route_path(req).ends_with("/csv") && req.method() == "POST" {
        true => firmspace::bank::csv::FILE_MAX,
        false => http::MAX_BODY,
    };
    if http::body_bytes(req).len() <= limit {
        return Ok(());
    }
    let detail = match limit {
        http::MAX_BODY => "body exceeds 256 KiB",
        _ => "a CSV file is at most 5 MiB",
    };
    Err(ApiError::new(413, "payload_too_large", detail))
}

/// Whom the admin's `/api` requests (a new organisation) count against: one budget for every
/// admin token, as `api:admin`.
const ADMIN_BUDGET: &str = "api:admin";

/// The longest id a path may carry, in bytes: the document's limit too.
pub const PATH_ID_MAX: usize = 1024;

/// A request outside `/api` that reached us through the gateway's `$default` route: a webhook
/// URL called with another method than POST is a 405, as is the operator's page (the gateway
/// sends it `GET /ops` alone), anything else a 404.
fn unrouted(method: &str, segments: &[&str]) -> ApiError {
    match segments {
        ["ops"] => ApiError::method_not_allowed(&["GET"]),
        ["hooks", _, "messages" | "bank"] => ApiError::method_not_allowed(&["GET", "POST"]),
        ["hooks", _, _] if method != "POST" => ApiError::method_not_allowed(&["POST"]),
        _ => ApiError::not_found("route"),
    }
}

/// The token that may create organisations. In a deployment it lives in Secrets Manager
/// (`ADMIN_TOKEN_SECRET_ARN`) and is read on the first `POST /api/orgs`, then kept: no other
/// route needs it, so a cold start pays no call for it. `ADMIN_TOKEN` gives it directly, only for
/// a function run by hand without the stack.
use firmspace::admin::{bearer, AdminToken};
