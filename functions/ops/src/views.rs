//! The operator's reads: the summary, the lists (each paged with `limit` and `cursor`), the
//! chart, and a look into a DLQ.

use crate::{App, Who};
use chrono::{DateTime, Utc};
use firmspace::http::{json_response, query, typed_response, ApiError};
use firmspace::ids::OrgId;
use firmspace::ops::answers::{Chart, ConsumerState, OrgRow, ReviewFigures, RunFigures, Summary};
use firmspace::ops::events::{self, Counts, Filter, FilterError};
use firmspace::ops::{chart, review, runs, EventKind};
use firmspace::store::{counters, StoreError};
use lambda_http::{Body, Request, Response};
use serde_json::json;
use std::collections::BTreeMap;

/// The method a path of ours takes (`None`: not ours, a 404): the page and the reads `GET`,
/// the actions `POST`. Another method on one of them is a 405 naming it.
pub(crate) fn takes(segments: &[&str]) -> Option<&'static str> {
    match segments {
        ["ops"]
        | ["ops", "summary" | "orgs" | "events" | "review" | "runs" | "chart" | "consumers"
        | "integrations"]
        | ["ops", "dlq", _] => Some("GET"),
        ["ops", "consumers" | "integrations", _, _]
        | ["ops", "dlq", _, "redrive"]
        | ["ops", "events", "replay"]
        | ["ops", "events" | "review" | "runs", _, _] => Some("POST"),
        _ => None,
    }
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

/// A page of a list: `{"items", "cursor"}`.
/// A page of an `/ops` list: `cursor` is always there, null at the end.
fn listed<T: serde::Serialize>(items: Vec<T>, next: Option<String>) -> Response<Body> {
    json_response(200, &json!({"items": items, "cursor": next}))
}

/// A whole list: `{"items"}`.
fn all<T: serde::Serialize>(items: Vec<T>) -> Response<Body> {
    json_response(200, &json!({ "items": items }))
}

/// The figures of one organisation or (`None`) of the deployment: one read of the counters
/// (two for the deployment's), one query of one item per kind for the oldest waiting event and
/// one read of the day's spending, whatever the number of events or organisations.
pub(crate) struct Figures {
    kinds: BTreeMap<&'static str, Counts>,
    open: u64,
    by_reason: BTreeMap<String, u64>,
    needs_check: u64,
    failed: u64,
    orgs: u64,
}

pub(crate) async fn figures(
    store: &firmspace::store::Store,
    org: Option<&OrgId>,
    now: DateTime<Utc>,
) -> Result<Figures, StoreError> {
    let counted = match org {
        Some(org) => counters::read(store, org, now, 7).await?,
        None => counters::read_all(store, now, 7).await?,
    };
    let counted = &counted;
    let spent = &firmspace::store::spent::read(store, org, now.date_naive()).await?;
    let kinds = futures::future::try_join_all(EventKind::ALL.map(|kind| async move {
        let day = spent.get(&kind).copied().unwrap_or_default();
        events::counts(store, org, (kind, &day), counted, now)
            .await
            .map(|c| (kind.name(), c))
    }))
    .await?;
    Ok(Figures {
        kinds: kinds.into_iter().collect(),
        open: counted.open.values().sum(),
        by_reason: counted.open.clone(),
        needs_check: counted.runs("needs_check"),
        failed: counted.runs("failed"),
        orgs: match org {
            Some(_) => 1,
            None => counted.tally_of("orgs"),
        },
    })
}

/// `GET /ops/summary`.
pub(crate) async fn summary(
    app: &App,
    who: &Who,
    req: &Request,
    now: DateTime<Utc>,
) -> Result<Response<Body>, ApiError> {
    let org = who.scope(req)?;
    let f = figures(&app.store, org.as_ref(), now).await?;
    let queues = match who {
        Who::Admin(_) => Some(
            app.queues
                .depths()
                .await
                .map_err(|e| ApiError::internal(&e, true))?,
        ),
        Who::Org(_) => None,
    };
    let summary = Summary {
        events: f.kinds,
        queues,
        review: ReviewFigures {
            open: f.open,
            by_reason: f.by_reason,
        },
        runs: RunFigures {
            needs_check: f.needs_check,
            failed: f.failed,
        },
        orgs: f.orgs,
        at: firmspace::time::format(now),
    };
    Ok(typed_response(200, &summary))
}

/// The deployment's figures as CloudWatch metrics (EMF): what the dashboard shows beside the
/// edges' `deliveries`, and what the alarm on the oldest waiting event reads. The schedule
/// emits them every 5 minutes.
pub(crate) fn gauges(f: &Figures, now: DateTime<Utc>) {
    let mut oldest = 0f64;
    for (kind, c) in &f.kinds {
        let kind = kind.to_string();
        let age = c
            .oldest_waiting_at
            .as_deref()
            .and_then(firmspace::time::parse)
            .map_or(0.0, |at| (now - at).num_seconds().max(0) as f64);
        oldest = oldest.max(age);
        metrics::gauge!("events_today", "kind" => kind.clone()).set(c.today as f64);
        metrics::gauge!("events_waiting", "kind" => kind.clone()).set(c.waiting as f64);
        metrics::gauge!("events_oldest_waiting_seconds", "kind" => kind).set(age);
    }
    metrics::gauge!("oldest_waiting_seconds").set(oldest);
    metrics::gauge!("review_open").set(f.open as f64);
    metrics::gauge!("runs_needs_check").set(f.needs_check as f64);
    metrics::gauge!("runs_failed").set(f.failed as f64);
}

/// `GET /ops/orgs`: the organisations the caller may look at (the admin's picker).
pub(crate) async fn orgs(app: &App, who: &Who, req: &Request) -> Result<Response<Body>, ApiError> {
    let (cursor, limit) = (query(req, "cursor"), limit(req)?);
    let (orgs, next) = match who {
        // A key's list is its own organisation, one page: no cursor is one it gave.
        Who::Org(_) if cursor.is_some() => {
            return Err(ApiError::bad_request(
                "invalid_cursor",
                "cursor is not one this list gave",
            ))
        }
        Who::Org(key) => (vec![(key.org.clone(), String::new())], None),
        Who::Admin(_) => firmspace::orgs::page(&app.store, limit, cursor.as_deref())
            .await
            .map_err(|e| read_error(e, cursor.as_deref()))?,
    };
    let items = orgs
        .into_iter()
        .map(|(org, name)| OrgRow {
            id: org.as_str().to_owned(),
            name,
        })
        .collect();
    Ok(listed(items, next))
}

/// `GET /ops/events?kind=payment[&from&to&q]`.
pub(crate) async fn events(
    app: &App,
    who: &Who,
    req: &Request,
) -> Result<Response<Body>, ApiError> {
    let org = who.one(req)?;
    let kind = kind_named(query(req, "kind").as_deref())?;
    let (from, to, q) = (query(req, "from"), query(req, "to"), query(req, "q"));
    let filter = Filter::parse(from.as_deref(), to.as_deref(), q.as_deref()).map_err(|e| {
        let code = match e {
            FilterError::Window => "invalid_window",
            FilterError::Query => "invalid_q",
        };
        ApiError::bad_request(code, e.to_string())
    })?;
    let cursor = query(req, "cursor");
    let (items, next) = events::page(
        &app.store,
        &org,
        kind,
        &filter,
        limit(req)?,
        cursor.as_deref(),
    )
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
        review::view,
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
    Ok(typed_response(200, &Chart { hours }))
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
    Ok(listed(items, None))
}

/// `GET /ops/consumers` (admin): each worker, whether it takes messages, and who paused or
/// resumed it last, when.
pub(crate) async fn consumers(app: &App, who: &Who) -> Result<Response<Body>, ApiError> {
    admin_only(who)?;
    let Some(consumers) = &app.consumers else {
        return Ok(all(Vec::<ConsumerState>::new()));
    };
    let items = consumers
        .states(&app.store)
        .await
        .map_err(|e| ApiError::internal(&e, true))?;
    Ok(all(items))
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
    Ok(all(items))
}

/// A kind as a request names it, or 400 `invalid_kind` listing the kinds.
pub(crate) fn kind_named(raw: Option<&str>) -> Result<EventKind, ApiError> {
    raw.and_then(EventKind::parse).ok_or_else(|| {
        let names: Vec<&str> = EventKind::ALL.iter().map(|k| k.name()).collect();
        ApiError::bad_request(
            "invalid_kind",
            format!("kind is one of {}", names.join(", ")),
        )
    })
}
