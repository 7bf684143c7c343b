//! The operator's reads: the summary, the lists (each paged with `limit` and `cursor`), the
//! chart, and a look into a DLQ.

use crate::{App, Who};
use chrono::{DateTime, Utc};
use firmspace::http::{json_response, query, ApiError};
use firmspace::ids::OrgId;
use firmspace::ops::events::{self, Counts};
use firmspace::ops::{chart, review, runs, runs_pk, EventKind};
use firmspace::store::{Index, StoreError};
use futures::{StreamExt, TryStreamExt};
use lambda_http::{Body, Request, Response};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// Whether a path is one of ours (for a 405 rather than a 404).
pub(crate) fn known(segments: &[&str]) -> bool {
    matches!(
        segments,
        [
            "ops",
            "summary"
                | "orgs"
                | "events"
                | "review"
                | "runs"
                | "chart"
                | "consumers"
                | "integrations"
        ] | ["ops", "dlq", _]
            | ["ops", "consumers" | "integrations", _, _]
            | ["ops", "dlq", _, "redrive"]
            | ["ops", "events" | "review" | "runs", _, _]
    )
}

/// `limit`: 50 by default, at most 200.
fn limit(req: &Request) -> Result<i32, ApiError> {
    match query(req, "limit") {
        None => Ok(50),
        Some(raw) => raw
            .parse::<i32>()
            .ok()
            .filter(|n| (1..=200).contains(n))
            .ok_or_else(|| ApiError::bad_request("invalid_limit", "limit is 1 to 200")),
    }
}

fn read_error(e: StoreError, cursor: Option<&str>) -> ApiError {
    match e {
        StoreError::Malformed { .. } if cursor.is_some() => {
            ApiError::bad_request("invalid_cursor", "cursor is not one this list gave")
        }
        other => other.into(),
    }
}

fn listed(items: Vec<Value>, next: Option<String>) -> Response<Body> {
    json_response(200, &json!({"items": items, "cursor": next}))
}

/// The organisations a summary adds up: the one asked about, or (the admin without `org=`)
/// every organisation.
async fn orgs_of(app: &App, who: &Who, req: &Request) -> Result<Vec<OrgId>, ApiError> {
    if let Some(org) = who.scope(req)? {
        return Ok(vec![org]);
    }
    let mut all = Vec::new();
    let mut cursor = None;
    loop {
        let (page, next) = firmspace::orgs::page(&app.store, 200, cursor.as_deref()).await?;
        all.extend(page.into_iter().map(|(org, _)| org));
        match next {
            Some(next) => cursor = Some(next),
            None => return Ok(all),
        }
    }
}

/// Organisations a summary reads at the same time.
const ORGS_AT_ONCE: usize = 8;

/// One organisation's figures.
struct OrgFigures {
    kinds: Vec<(EventKind, Counts)>,
    reasons: BTreeMap<String, u64>,
    needs_check: u64,
    failed: u64,
}

async fn org_figures(
    store: &firmspace::store::Store,
    org: &OrgId,
    now: DateTime<Utc>,
) -> Result<OrgFigures, StoreError> {
    // A week of counters and the open review items: one read, whatever the volume.
    let counted = firmspace::store::counters::read(store, org, now, 7).await?;
    let counted = &counted;
    let per_kind = futures::future::try_join_all(EventKind::ALL.map(|kind| async move {
        events::counts(store, org, kind, counted, now)
            .await
            .map(|c| (kind, c))
    }));
    let (checking, failing) = (runs_pk(org, "needs_check"), runs_pk(org, "failed"));
    let (kinds, needs_check, failed) = futures::try_join!(
        per_kind,
        store.count_in(Index::States, &checking, None),
        store.count_in(Index::States, &failing, None),
    )?;
    Ok(OrgFigures {
        kinds,
        reasons: counted.open.clone(),
        needs_check,
        failed,
    })
}

/// `GET /ops/summary`.
pub(crate) async fn summary(
    app: &App,
    who: &Who,
    req: &Request,
    now: DateTime<Utc>,
) -> Result<Response<Body>, ApiError> {
    let orgs = orgs_of(app, who, req).await?;
    let mut kinds: BTreeMap<&str, Counts> = EventKind::ALL
        .iter()
        .map(|k| (k.name(), Counts::default()))
        .collect();
    let mut open = 0u64;
    let mut by_reason: BTreeMap<String, u64> = BTreeMap::new();
    let (mut needs_check, mut failed) = (0u64, 0u64);
    // Organisations side by side, a few at a time: each is a handful of key-range queries.
    let figures: Vec<OrgFigures> = futures::stream::iter(orgs.iter())
        .map(|org| org_figures(&app.store, org, now))
        .buffer_unordered(ORGS_AT_ONCE)
        .try_collect()
        .await?;
    for f in figures {
        for (kind, counts) in f.kinds {
            *kinds.entry(kind.name()).or_default() += counts;
        }
        for (reason, n) in f.reasons {
            open += n;
            *by_reason.entry(reason).or_default() += n;
        }
        needs_check += f.needs_check;
        failed += f.failed;
    }
    let queues = match who {
        Who::Admin(_) => Some(
            app.queues
                .depths()
                .await
                .map_err(|e| ApiError::internal(&e, true))?,
        ),
        Who::Org(_) => None,
    };
    if who.is_admin() && query(req, "org").is_none() {
        gauges(&kinds, open, needs_check, failed);
    }
    Ok(json_response(
        200,
        &json!({
            "events": kinds,
            "queues": queues,
            "review": {"open": open, "by_reason": by_reason},
            "runs": {"needs_check": needs_check, "failed": failed},
            "orgs": orgs.len(),
            "at": firmspace::time::format(now),
        }),
    ))
}

/// The deployment's figures as CloudWatch metrics (EMF, flushed with the answer): what the
/// dashboard shows beside the edges' `deliveries`.
fn gauges(kinds: &BTreeMap<&str, Counts>, open: u64, needs_check: u64, failed: u64) {
    for (kind, c) in kinds {
        let kind = kind.to_string();
        metrics::gauge!("events_today", "kind" => kind.clone()).set(c.today as f64);
        metrics::gauge!("events_waiting", "kind" => kind).set(c.waiting as f64);
    }
    metrics::gauge!("review_open").set(open as f64);
    metrics::gauge!("runs_needs_check").set(needs_check as f64);
    metrics::gauge!("runs_failed").set(failed as f64);
}

/// `GET /ops/orgs`: the organisations the caller may look at (the admin's picker).
pub(crate) async fn orgs(app: &App, who: &Who, req: &Request) -> Result<Response<Body>, ApiError> {
    let cursor = query(req, "cursor");
    let (orgs, next) = match who {
        Who::Org(key) => (vec![(key.org.clone(), String::new())], None),
        Who::Admin(_) => firmspace::orgs::page(&app.store, limit(req)?, cursor.as_deref())
            .await
            .map_err(|e| read_error(e, cursor.as_deref()))?,
    };
    let items = orgs
        .into_iter()
        .map(|(org, name)| json!({"id": org.as_str(), "name": name}))
        .collect();
    Ok(listed(items, next))
}

/// `GET /ops/events?kind=payment`.
pub(crate) async fn events(
    app: &App,
    who: &Who,
    req: &Request,
) -> Result<Response<Body>, ApiError> {
    let org = who.one(req)?;
    let kind = query(req, "kind")
        .and_then(|k| EventKind::parse(&k))
        .ok_or_else(|| {
            ApiError::bad_request(
                "invalid_kind",
                "kind is payment, message, call, bank_row or sms",
            )
        })?;
    let cursor = query(req, "cursor");
    let (items, next) = events::page(&app.store, &org, kind, limit(req)?, cursor.as_deref())
        .await
        .map_err(|e| read_error(e, cursor.as_deref()))?;
    Ok(listed(items, next))
}

/// A list's `state`: one of `states`, the first by default.
fn state<'a>(req: &Request, states: &[&'a str]) -> Result<&'a str, ApiError> {
    match query(req, "state") {
        None => Ok(states[0]),
        Some(raw) => states.iter().find(|s| **s == raw).copied().ok_or_else(|| {
            ApiError::bad_request(
                "invalid_state",
                format!("state is one of {}", states.join(", ")),
            )
        }),
    }
}

/// `GET /ops/review?state=open`.
pub(crate) async fn review(
    app: &App,
    who: &Who,
    req: &Request,
) -> Result<Response<Body>, ApiError> {
    let org = who.one(req)?;
    let state = state(req, &review::STATES)?;
    let cursor = query(req, "cursor");
    let (items, next) = firmspace::review::page(
        &app.store,
        &org,
        state,
        limit(req)?,
        cursor.as_deref(),
        review::to_json,
    )
    .await
    .map_err(|e| read_error(e, cursor.as_deref()))?;
    Ok(listed(items, next))
}

/// `GET /ops/runs?state=needs_check`.
pub(crate) async fn runs(app: &App, who: &Who, req: &Request) -> Result<Response<Body>, ApiError> {
    let org = who.one(req)?;
    let state = state(req, &runs::STATES)?;
    let cursor = query(req, "cursor");
    let (items, next) = runs::page(&app.store, &org, state, limit(req)?, cursor.as_deref())
        .await
        .map_err(|e| read_error(e, cursor.as_deref()))?;
    Ok(listed(items, next))
}

/// `GET /ops/chart`: stored events and duplicates per hour, the last 24 hours.
pub(crate) async fn chart(
    app: &App,
    who: &Who,
    req: &Request,
    now: DateTime<Utc>,
) -> Result<Response<Body>, ApiError> {
    let org = who.one(req)?;
    let hours = chart::hours(&app.store, &org, now).await?;
    Ok(json_response(200, &json!({"hours": hours})))
}

/// The deployment's queues answer to the admin only.
pub(crate) fn admin_only(who: &Who) -> Result<(), ApiError> {
    match who {
        Who::Admin(_) => Ok(()),
        Who::Org(_) => Err(ApiError::new(
            403,
            "forbidden",
            "the queues are the deployment's: the admin token only",
        )),
    }
}

/// `GET /ops/dlq/{queue}`: up to `limit` messages, none consumed.
pub(crate) async fn dlq(
    app: &App,
    who: &Who,
    req: &Request,
    queue: &str,
) -> Result<Response<Body>, ApiError> {
    admin_only(who)?;
    let pair = app
        .queues
        .pair(queue)
        .ok_or_else(|| ApiError::not_found("queue"))?;
    let items = app
        .queues
        .peek(pair, limit(req)? as usize)
        .await
        .map_err(|e| ApiError::internal(&e, true))?;
    let mut answer = Map::new();
    answer.insert("items".into(), json!(items));
    answer.insert("cursor".into(), Value::Null);
    Ok(json_response(200, &Value::Object(answer)))
}

/// `GET /ops/consumers` (admin): each worker, whether it takes messages, and who paused or
/// resumed it last, when.
pub(crate) async fn consumers(app: &App, who: &Who) -> Result<Response<Body>, ApiError> {
    admin_only(who)?;
    let Some(consumers) = &app.consumers else {
        return Ok(json_response(200, &json!({ "items": [] })));
    };
    let items = consumers
        .states(&app.store)
        .await
        .map_err(|e| ApiError::internal(&e, true))?;
    Ok(json_response(200, &json!({ "items": items })))
}

/// `GET /ops/integrations`: the organisation's paused integrations, who paused each and when,
/// and how many events wait.
pub(crate) async fn integrations(
    app: &App,
    who: &Who,
    req: &Request,
) -> Result<Response<Body>, ApiError> {
    let org = who.one(req)?;
    let items = firmspace::ops::hold::paused_of(&app.store, &org).await?;
    Ok(json_response(200, &json!({ "items": items })))
}
