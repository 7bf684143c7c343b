//! `/ops/...`, served by the ops function, described here so one document covers every route.
//! Every route takes `Authorization: Bearer <API key or admin token>`; each `POST` an `Idempotency-Key`.

use super::parts::{error, parameter_of, SERVER};
use crate::route::Answer::{self, Html, Items, One, Paged};
use crate::route::{answer_of, doc, Schemas};
use crate::route::{In, Param};
use firmspace::commands::asks;
use firmspace::ops::answers as a;
use firmspace::payments::recover::Recovered;
use utoipa::openapi::path::{Operation, OperationBuilder};
use utoipa::openapi::{
    ContentBuilder, HttpMethod, PathItem, PathsBuilder, ResponseBuilder, ResponsesBuilder,
    SecurityRequirement,
};

const fn param(name: &'static str, at: In, required: bool, doc: &'static str) -> Param {
    Param {
        name,
        at,
        required,
        doc,
    }
}

const ORG: Param = param(
    "org",
    In::Query,
    false,
    "the admin token: the organisation (required for lists; absent on the summary: all of them)",
);
const LIMIT: Param = param("limit", In::Query, false, "1 to 200, default 50");
const CURSOR: Param = param(
    "cursor",
    In::Query,
    false,
    "the `cursor` of the page before",
);
const KEY: Param = param(
    "Idempotency-Key",
    In::Header,
    true,
    "one per intended action: a repeat gets the stored answer",
);
const ID: Param = param("id", In::Path, true, "the `id` a list gave for the item");

struct Route {
    method: HttpMethod,
    path: &'static str,
    /// Its `operationId`.
    name: &'static str,
    summary: &'static str,
    params: &'static [Param],
    /// Its JSON body, and whether it must be sent.
    body: Option<(crate::route::Doc, bool)>,
    /// Its success statuses, each with when.
    ok: &'static [(u16, &'static str)],
    answer: Answer,
    errors: &'static [(u16, &'static str)],
}

const ROUTES: &[Route] = &[
    Route { method: HttpMethod::Get, path: "/ops", name: "opsPage", summary: "The operator's page (HTML; its script and style beside it)", params: &[],
        ok: &[(200, "the page (its script and style beside it)")], body: None, answer: Html("the operator's page: sign in with a key, see the summary, lists and chart, and act"), errors: &[] },
    Route { method: HttpMethod::Get, path: "/ops/summary", name: "getOpsSummary", summary: "Events stored today and in 7 days and waiting, per kind; queues (admin); open review items; runs to check", params: &[ORG],
        ok: &[(200, "the figures of the organisation (or, for the admin without `org`, of the deployment); `waiting` is exact, held events included")], body: None, answer: One(doc::<a::Summary>), errors: &[(400, "`invalid_org`")] },
    Route { method: HttpMethod::Get, path: "/ops/orgs", name: "listOpsOrgs", summary: "The organisations the caller may look at", params: &[LIMIT, CURSOR],
        ok: &[(200, "a page of organisations (a key's: its own, one page)")], body: None, answer: Paged(doc::<a::OrgRow>), errors: &[(400, "`invalid_limit`, `invalid_cursor`")] },
    Route { method: HttpMethod::Get, path: "/ops/events", name: "listOpsEvents", summary: "Events of a kind with a summary and their consequences, newest first; `from` (inclusive) and `to` (exclusive) are RFC 3339 times on the listed `at`, `q` (1-200 characters) a case-insensitive piece of the key or the summary", params: &[param("kind", In::Query, true, "payment, message, call, bank_row, sms, lead or credit_note"), param("from", In::Query, false, "RFC 3339, inclusive"), param("to", In::Query, false, "RFC 3339, exclusive"), param("q", In::Query, false, "text to find"), ORG, LIMIT, CURSOR],
        ok: &[(200, "a page of events (filtered with `q`: a page may hold fewer than `limit` while `cursor` is not null)")], body: None, answer: Paged(doc::<a::EventRow>), errors: &[(400, "`invalid_kind`, `invalid_window`, `invalid_q`, `missing_org`, `invalid_limit`, `invalid_cursor`")] },
    Route { method: HttpMethod::Post, path: "/ops/events/replay", name: "replayOpsEvents", summary: "A kind's events in a window `{\"kind\", \"from\", \"to\", \"dry_run\"?, \"cursor\"?}` (at most 7 days): counted (`dry_run`), or their missing consequences sent, each once, 15 s a call", params: &[ORG, KEY],
        ok: &[(200, "a dry run's counts, or what this call sent and whether the window is done (`more`, `cursor`)")], body: Some((doc::<asks::ReplayWindow>, true)), answer: One(answer_of::<firmspace::commands::operate::ReplayWindow>()), errors: &[(400, "`missing_idempotency_key`, `malformed`, `invalid_kind`, `invalid_window`, `window_too_long`, `invalid_cursor`"), (409, "`idempotency_key_reused`")] },
    Route { method: HttpMethod::Get, path: "/ops/review", name: "listOpsReview", summary: "Review items by state, newest first", params: &[param("state", In::Query, false, "open (default) or resolved"), ORG, LIMIT, CURSOR],
        ok: &[(200, "a page of review items")], body: None, answer: Paged(doc::<a::OpsReviewItem>), errors: &[(400, "`invalid_state`, `missing_org`, `invalid_limit`, `invalid_cursor`")] },
    Route { method: HttpMethod::Get, path: "/ops/runs", name: "listOpsRuns", summary: "Automation runs by state, newest first", params: &[param("state", In::Query, false, "needs_check (default), failed, sending, not_sent, sent, done, skipped"), ORG, LIMIT, CURSOR],
        ok: &[(200, "a page of runs")], body: None, answer: Paged(doc::<a::RunRow>), errors: &[(400, "`invalid_state`, `missing_org`")] },
    Route { method: HttpMethod::Get, path: "/ops/chart", name: "getOpsChart", summary: "Stored events and duplicates per hour, the last 24 hours", params: &[ORG],
        ok: &[(200, "24 hours, oldest first")], body: None, answer: One(doc::<a::Chart>), errors: &[(400, "`missing_org`")] },
    Route { method: HttpMethod::Get, path: "/ops/dlq/{queue}", name: "listOpsDeadLetters", summary: "A DLQ's messages, none consumed (admin token)", params: &[param("queue", In::Path, true, "notifications, automation or matching"), LIMIT],
        ok: &[(200, "the DLQ's messages (`cursor` is always null)")], body: None, answer: Paged(doc::<a::DeadLetter>), errors: &[(403, "`forbidden`: an organisation's key"), (404, "`not_found`: no such queue")] },
    Route { method: HttpMethod::Post, path: "/ops/dlq/{queue}/redrive", name: "redriveOpsDeadLetters", summary: "Move a DLQ's messages (all, or `{\"ids\": [...]}`) back to their queue (admin token)", params: &[param("queue", In::Path, true, "the queue"), KEY],
        ok: &[(200, "how many moved, and whether the DLQ may hold more (`more`: redrive again)")], body: Some((doc::<asks::Redrive>, false)), answer: One(answer_of::<firmspace::commands::operate::RedriveDeadLetters>()), errors: &[(400, "`missing_idempotency_key`, `invalid_ids`, `malformed`"), (403, "`forbidden`"), (409, "`idempotency_key_reused`")] },
    Route { method: HttpMethod::Post, path: "/ops/events/{id}/replay", name: "replayOpsEvent", summary: "Derive a stored event's consequences again and send them; what happened is absorbed by its key", params: &[ID, KEY],
        ok: &[(200, "how many consequences were sent")], body: None, answer: One(answer_of::<firmspace::commands::operate::ReplayEvent>()), errors: &[(400, "`missing_idempotency_key`"), (404, "`not_found`: no such event of the caller's"), (409, "`idempotency_key_reused`")] },
    Route { method: HttpMethod::Post, path: "/ops/review/{id}/resolve", name: "resolveOpsReviewItem", summary: "Resolve an open review item with `{\"note\", \"decision\"?, \"invoice_id\"?, \"as\"?}` (note 1-2000 characters; `apply` books a `payment_proposed` item's payment once, or puts money a payment kept (unknown_invoice, invoice_closed, currency_mismatch, an overpayment's excess) on `invoice_id` once; `same_money` books one reversal of the item's payment, the same money as the payment `as` names; `dismiss` books nothing; a key needs `write` and `ops`)", params: &[ID, KEY],
        ok: &[(200, "the item resolved, with the payment or reversal a decision booked")], body: Some((doc::<asks::Resolve>, true)), answer: One(answer_of::<firmspace::commands::review::ResolveReview>()), errors: &[(400, "`missing_idempotency_key`, `malformed`, `invalid_field`, `invalid_decision`, `currency_mismatch`"), (403, "`forbidden`"), (404, "`not_found`"), (409, "`not_open` with the stored `outcome`; `payment_conflict`: the payment the decision books was stored before as another; `idempotency_key_reused`")] },
    Route { method: HttpMethod::Post, path: "/ops/runs/{id}/decide", name: "decideOpsRun", summary: "Decide a `needs_check` run: `{\"decision\": \"delivered\" | \"resend\"}`", params: &[ID, KEY],
        ok: &[(200, "`delivered`: the run settled as `sent`"), (202, "`resend`: `sending`, queued for the automation worker, which sends and settles it")], body: Some((doc::<asks::Decide>, true)), answer: One(answer_of::<firmspace::commands::operate::DecideRun>()), errors: &[(400, "`missing_idempotency_key`, `invalid_decision`, `malformed`"), (404, "`not_found`"), (409, "`not_needs_check` with the run's `outcome`, `not_resendable`, `idempotency_key_reused`")] },
    Route { method: HttpMethod::Get, path: "/ops/consumers", name: "listOpsConsumers", summary: "The workers, whether each takes messages, and who paused or resumed it last (admin token)", params: &[],
        ok: &[(200, "every worker")], body: None, answer: Items(doc::<a::ConsumerState>), errors: &[(403, "`forbidden`: an organisation's key")] },
    Route { method: HttpMethod::Post, path: "/ops/consumers/{name}/pause", name: "pauseOpsConsumer", summary: "Pause a worker: its SQS event source mapping disabled, its messages wait in the queue (admin token)", params: &[param("name", In::Path, true, "notify-worker, automation-worker, match-worker or bank-import"), KEY],
        ok: &[(200, "the worker as `GET /ops/consumers` shows it")], body: None, answer: One(answer_of::<firmspace::commands::operate::PauseWorker>()), errors: &[(400, "`missing_idempotency_key`"), (403, "`forbidden`"), (404, "`not_found`: no such worker"), (409, "`idempotency_key_reused`")] },
    Route { method: HttpMethod::Post, path: "/ops/consumers/{name}/resume", name: "resumeOpsConsumer", summary: "Resume a paused worker: its mapping enabled again, the waiting messages delivered (admin token)", params: &[param("name", In::Path, true, "the worker"), KEY],
        ok: &[(200, "the worker as `GET /ops/consumers` shows it")], body: None, answer: One(answer_of::<firmspace::commands::operate::PauseWorker>()), errors: &[(400, "`missing_idempotency_key`"), (403, "`forbidden`"), (404, "`not_found`: no such worker"), (409, "`idempotency_key_reused`")] },
    Route { method: HttpMethod::Get, path: "/ops/integrations", name: "listOpsIntegrations", summary: "The organisation's paused integrations, who paused each and when, and how many events wait", params: &[ORG],
        ok: &[(200, "the paused integrations (and those still resuming), longest paused first")], body: None, answer: Items(doc::<a::PausedIntegration>), errors: &[(400, "`missing_org`")] },
    Route { method: HttpMethod::Post, path: "/ops/integrations/{id}/recover", name: "recoverOpsIntegration", summary: "Recover what a provider sent in `{\"from\", \"to\", \"cursor\"?}` (at most 31 days): a Stripe integration's events list (its `api_key`) booked through its webhook's path and key, or a monobank bank integration's statement for the window, a page a call", params: &[param("id", In::Path, true, "the integration's id"), KEY], ok: &[(200, "what was asked and booked; `more` with `cursor`: recover the window again with it")], body: Some((doc::<asks::Recover>, true)), answer: One(doc::<Recovered>), errors: &[(400, "`missing_idempotency_key`, `malformed`, `invalid_window`, `window_too_long`, `not_recoverable`"), (404, "`not_found`"), (409, "`no_api_key`, `provider_refused_key` (Stripe refused the key: set another), `idempotency_key_reused`"), (503, "`provider_unavailable`, `statement_busy`: ask again")] },
    Route { method: HttpMethod::Post, path: "/ops/integrations/{id}/pause", name: "pauseOpsIntegration", summary: "Pause an integration: its deliveries are stored and answered as ever, their consequences wait", params: &[param("id", In::Path, true, "the integration's id"), KEY], ok: &[(200, "the integration paused (`changed: false` when it was paused already)")], body: None, answer: One(doc::<a::IntegrationPaused>), errors: &[(400, "`missing_idempotency_key`"), (404, "`not_found`: no such integration of the caller's"), (409, "`idempotency_key_reused`")] },
    Route { method: HttpMethod::Post, path: "/ops/integrations/{id}/resume", name: "resumeOpsIntegration", summary: "Resume an integration: the pause lifted, then every held event sent on once (a held SMS decided in event order)", params: &[param("id", In::Path, true, "the integration's id or the digest its list shows"), ORG, KEY], ok: &[(200, "the pause lifted and every held event sent on once")], body: None, answer: One(doc::<a::IntegrationResumed>), errors: &[(400, "`missing_idempotency_key`"), (404, "`not_found`"), (409, "`idempotency_key_reused`"), (503, "`held_not_listed`: resume again")] },
];

/// A route's answers: its successes, its refusals, and those every route can give.
fn responses(route: &Route, schemas: &mut Schemas) -> utoipa::openapi::Responses {
    let (answer, media) = super::parts::answer_schema(&route.answer, schemas);
    let mut responses = ResponsesBuilder::new();
    for (status, when) in route.ok {
        let content = ContentBuilder::new().schema(Some(answer.clone())).build();
        let ok = ResponseBuilder::new()
            .description(*when)
            .content(media, content);
        let ok = match route.method {
            HttpMethod::Post => ok.header(super::parts::REPLAYED, super::parts::replayed()),
            _ => ok,
        };
        responses = responses.response(status.to_string(), ok);
    }
    let mut responses =
        responses.response("401", error("`unauthorized`: no key, or not one of ours"));
    for (status, codes) in route
        .errors
        .iter()
        .chain([super::parts::LIMITED].iter())
        .chain(SERVER.iter())
    {
        responses = responses.response(status.to_string(), error(codes));
    }
    // A path parameter names something that may not be there: every such route can be 404.
    if route.path.contains('{') && !route.errors.iter().any(|(status, _)| *status == 404) {
        let codes = "`not_found`: nothing of the caller's under that id";
        responses = responses.response("404", error(codes));
    }
    if route.path.contains('{') {
        let (status, codes) = super::parts::OTHER_PATH;
        responses = responses.response(status.to_string(), error(codes));
    }
    responses.build()
}

fn operation(route: &Route, schemas: &mut Schemas) -> Operation {
    let operation = OperationBuilder::new()
        .operation_id(Some(route.name))
        .tag("ops")
        .summary(Some(route.summary))
        .parameters(Some(
            route.params.iter().map(|p| parameter_of(route.path, p)),
        ))
        .request_body(
            route
                .body
                .map(|(doc, required)| super::parts::json_body(doc, required, schemas)),
        )
        .responses(responses(route, schemas));
    // Every route but the page itself takes a key: an organisation's (`read` to look, `ops`
    // to act; resolving also `write`) or the admin token.
    let admin = SecurityRequirement::new(super::parts::ADMIN_TOKEN, Vec::<&str>::new());
    let scopes: &[&str] = match (route.method.clone(), route.name) {
        (_, "opsPage") => return operation.build(),
        (_, name) if ADMIN_ONLY.contains(&name) => return operation.security(admin).build(),
        (HttpMethod::Get, _) => &["read"],
        (_, "resolveOpsReviewItem") => &["write", "ops"],
        _ => &["ops"],
    };
    operation
        .security(SecurityRequirement::new(
            super::parts::ORG_KEY,
            scopes.iter().copied(),
        ))
        .security(admin)
        .build()
}

/// The deployment's routes: the admin token's alone (an organisation's key is 403).
const ADMIN_ONLY: &[&str] = &[
    "listOpsDeadLetters",
    "redriveOpsDeadLetters",
    "listOpsConsumers",
    "pauseOpsConsumer",
    "resumeOpsConsumer",
];

/// The ops routes, added to the document's paths (their answers' schemas to `schemas`).
pub fn paths(mut paths: PathsBuilder, schemas: &mut Schemas) -> PathsBuilder {
    for route in ROUTES {
        let operation = operation(route, schemas);
        paths = paths.path(route.path, PathItem::new(route.method.clone(), operation));
    }
    paths
}

/// How many operations the ops routes add.
pub const OPERATIONS: usize = ROUTES.len();
