//! The operator's actions, each once per `Idempotency-Key`: a repeat gets the stored answer
//! and does nothing, the same key with another request 409 `idempotency_key_reused`. Each
//! action is safe twice over besides, so a twin sent while the first still works does the work
//! too and is told what it did: a redrive moves what is in the DLQ now, a replay's consequences
//! are absorbed by their keys, a pause or a resume finds the state it sets, a rotation to the
//! secrets held changes nothing, and a resolution or a decision is a conditional move out of
//! `open` or `needs_check`.

use crate::views::kind_named;
use crate::{App, Who};
use chrono::{DateTime, Utc};
use firmspace::commands::asks;
use firmspace::commands::{Actor, AnyCommand, Deployment, Env, RequestKey, Stored, Whose};
use firmspace::effects::worker::operator_org;
use firmspace::http::performed_response;
use firmspace::http::{body_bytes, parse_json, ApiError};
use firmspace::ops::events::{Window, EVENT_ITEMS, WINDOW_MAX};
use firmspace::ops::ids;
use firmspace::ops::review::NOTE_MAX;
use firmspace::ops::runs::Decision;
use lambda_http::{Body, Request, Response};

use firmspace::commands::operate::{
    DecideRun, PauseIntegration, PauseWorker, RecoverWindow, Recovers, RedriveDeadLetters,
    ReplayEvent, ReplayWindow, Which,
};
use firmspace::ids::OrgId;

/// One action, checked: everything it needs was read from the request before its key is
/// looked up, so a request refused here keeps no record. Every action is a command
/// (`firmspace::commands`), in the organisation it acts in (the deployment's own parts: the
/// operator's).
struct Action(OrgId, AnyCommand);

/// The action of `command`, in `org`.
fn command(org: OrgId, command: impl Into<AnyCommand>) -> Action {
    Action(org, command.into())
}

fn unknown(what: &str) -> ApiError {
    ApiError::not_found(what)
}

/// A redrive: a queue's name, and all its dead letters or 1 to 1000 named. Whose it is and
/// whether the queue is ours, `RedriveDeadLetters` says (403 for a key before anything else).
fn redrive(who: &Who, queue: &str, body: &[u8]) -> Result<Action, ApiError> {
    // Its body is read for the one who may act alone: a key's request is refused as it is.
    let ids = match (who, body.is_empty()) {
        (Who::Admin(_), false) => parse_json::<asks::Redrive>(body)?.ids,
        _ => None,
    };
    if ids
        .as_ref()
        .is_some_and(|ids| ids.is_empty() || ids.len() > 1000)
    {
        return Err(ApiError::bad_request(
            "invalid_ids",
            "ids names 1 to 1000 messages",
        ));
    }
    let queue = queue.to_owned();
    Ok(command(operator_org(), RedriveDeadLetters { queue, ids }))
}

/// The request's action, or why it is refused.
fn action(who: &Who, req: &Request, segments: &[&str]) -> Result<Action, ApiError> {
    let body = body_bytes(req);
    let owner = who.owner();
    match segments {
        ["ops", "dlq", queue, "redrive"] => redrive(who, queue, body),
        ["ops", "events", "replay"] => window(who, req, body),
        ["ops", "events", id, "replay"] => {
            let (org, pk) = ids::decode(id, owner, &EVENT_ITEMS).ok_or_else(|| unknown("event"))?;
            Ok(command(org, ReplayEvent { pk }))
        }
        ["ops", "review", id, "resolve"] => {
            let (org, pk) =
                ids::decode(id, owner, &["REVIEW#"]).ok_or_else(|| unknown("review item"))?;
            let (note, decision, named) = resolution(body)?;
            let resolve = firmspace::commands::review::ResolveReview {
                pk,
                note,
                decision,
                named,
            };
            Ok(command(org, resolve))
        }
        ["ops", "consumers" | "integrations", _, "pause" | "resume"] => pausing(who, req, segments),
        ["ops", "integrations", raw, "recover"] => recovering(who, raw, body),
        ["ops", "runs", id, "decide"] => {
            let (org, pk) = ids::decode(id, owner, &["RUN#"]).ok_or_else(|| unknown("run"))?;
            let decision = match parse_json::<asks::Decide>(body)?.decision.as_str() {
                "delivered" => Decision::Delivered,
                "resend" => Decision::Resend,
                _ => {
                    return Err(ApiError::bad_request(
                        "invalid_decision",
                        "decision is delivered or resend",
                    ))
                }
            };
            Ok(command(org, DecideRun { pk, decision }))
        }
        _ => Err(ApiError::not_found("route")),
    }
}

/// A window as a request names it: both ends RFC 3339, `from` before `to` (400
/// `invalid_window`), no longer than `max` (400 `window_too_long`, naming whose and how long).
fn window_of(
    (from, to): (&str, &str),
    (max, whose, how_long): (chrono::Duration, &str, &str),
) -> Result<(DateTime<Utc>, DateTime<Utc>), ApiError> {
    let bad = || {
        ApiError::bad_request(
            "invalid_window",
            "from and to are RFC 3339 times, from before to",
        )
    };
    let from = firmspace::time::parse(from).ok_or_else(bad)?;
    let to = firmspace::time::parse(to).ok_or_else(bad)?;
    if from >= to {
        return Err(bad());
    }
    if to - from > max {
        return Err(ApiError::bad_request(
            "window_too_long",
            format!("{whose} window is at most {how_long}"),
        ));
    }
    Ok((from, to))
}

/// A bulk replay's window: a kind, `from` before `to`, at most 7 days.
fn window(who: &Who, req: &Request, body: &[u8]) -> Result<Action, ApiError> {
    let org = who.one(req)?;
    let asked = parse_json::<asks::ReplayWindow>(body)?;
    let kind = kind_named(Some(&asked.kind))?;
    let (from, to) = window_of(
        (&asked.from, &asked.to),
        (WINDOW_MAX, "a replay's", "7 days"),
    )?;
    if asked.cursor.as_ref().is_some_and(|c| c.len() > 4096) {
        return Err(ApiError::bad_request(
            "invalid_cursor",
            "cursor is not one this replay gave",
        ));
    }
    let replay = ReplayWindow {
        window: Window { kind, from, to },
        dry_run: asked.dry_run,
        cursor: asked.cursor,
    };
    Ok(command(org, replay))
}

/// A resolution's note, decision and what the decision names, the note defaulting to the
/// decision.
fn resolution(
    body: &[u8],
) -> Result<
    (
        String,
        Option<firmspace::commands::Decision>,
        firmspace::commands::Named,
    ),
    ApiError,
> {
    let body = parse_json::<asks::Resolve>(body)?;
    let decision = match body.decision.as_deref() {
        None => None,
        Some(raw) => Some(firmspace::store::item::parse_tag(raw).ok_or_else(|| {
            ApiError::bad_request(
                "invalid_decision",
                "decision is apply, same_money, distinct or dismiss",
            )
        })?),
    };
    let note = match (body.note, decision) {
        (Some(note), _) => note,
        (None, Some(d)) => firmspace::store::item::tag_name(&d),
        (None, None) => return Err(ApiError::bad_request("invalid_field", "note is required")),
    };
    let note = firmspace::fields::text("note", note.trim(), NOTE_MAX)?.to_owned();
    let named = firmspace::commands::Named {
        invoice_id: body.invoice_id,
        same_as: body.same_as,
        amount: body.amount,
    };
    Ok((note, decision, named))
}

/// A recovery's integration (the caller's own) and window: both ends RFC 3339, `from` before
/// `to`, at most 31 days.
fn recovering(who: &Who, raw: &str, body: &[u8]) -> Result<Action, ApiError> {
    let id = firmspace::ids::IntegrationId::parse(raw)
        .ok()
        .filter(|id| who.owner().is_none_or(|org| *org == id.org))
        .ok_or_else(|| unknown("integration"))?;
    let asked = parse_json::<asks::Recover>(body)?;
    let longest = (
        firmspace::ops::recover::WINDOW_MAX,
        "a recovery's",
        "31 days",
    );
    let (from, to) = window_of((&asked.from, &asked.to), longest)?;
    let ask = firmspace::ops::recover::Ask {
        org: id.org.to_string(),
        integration_id: id.to_string(),
        from,
        to,
        cursor: asked.cursor,
    };
    Ok(command(id.org, RecoverWindow(ask)))
}

/// Pausing or resuming a worker (admin) or an integration (its organisation's key, or the admin).
fn pausing(who: &Who, req: &Request, segments: &[&str]) -> Result<Action, ApiError> {
    let paused = segments.last() == Some(&"pause");
    match segments {
        // The admin's: `PauseWorker` holds it to that.
        ["ops", "consumers", name, _] => {
            let name = (*name).to_owned();
            Ok(command(operator_org(), PauseWorker { name, paused }))
        }
        ["ops", "integrations", raw, _] => {
            let owner = who.owner();
            let id = firmspace::ids::IntegrationId::parse(raw)
                .ok()
                .filter(|id| owner.is_none_or(|org| *org == id.org));
            match id {
                Some(id) => {
                    let org = id.org.clone();
                    let id = Which::Id(id);
                    Ok(command(org, PauseIntegration { id, paused }))
                }
                // A paused integration as its list names it (resumption only).
                None if !paused && raw.starts_with("int_") && raw.len() <= 40 => {
                    let id = Which::Listed((*raw).to_owned());
                    Ok(command(who.one(req)?, PauseIntegration { id, paused }))
                }
                None => Err(unknown("integration")),
            }
        }
        _ => Err(ApiError::not_found("route")),
    }
}

pub(crate) async fn dispatch(
    app: &App,
    who: &Who,
    req: &Request,
    segments: &[&str],
    now: DateTime<Utc>,
) -> Result<Response<Body>, ApiError> {
    let key = firmspace::http::idempotency_key(req);
    let action = action(who, req, segments);
    // The deployment's queues and workers are the admin's: a key asking for them is refused
    // (by `perform`, the one place that says so) before its key is asked for.
    let theirs = match (&action, who) {
        (Ok(Action(_, command)), Who::Org(_)) => command.whose() == Whose::Deployment,
        _ => false,
    };
    let key = match theirs {
        true => String::new(),
        false => key?,
    };
    let Action(org, command) = action?;
    perform_as(app, who, req, key, (org, command), now).await
}

async fn perform_as(
    app: &App,
    who: &Who,
    req: &Request,
    key: String,
    (org, command): (firmspace::ids::OrgId, AnyCommand),
    now: DateTime<Utc>,
) -> Result<Response<Body>, ApiError> {
    // The admin's key is kept per organisation it acts in (after a space no key holds): the
    // same key for another organisation is another request, never the first one's answer.
    let (by, key) = match who {
        Who::Admin(name) => {
            let key = format!("{key} {org}");
            let name = name.clone();
            (Actor::Admin { name, org }, key)
        }
        Who::Org(key_of) => (Actor::Key(key_of.clone()), key),
    };
    let env = Env {
        store: &app.store,
        now,
        replies: &Stored,
        publisher: Some(&app.publisher),
        site: None,
        imports: Default::default(),
        deployment: Deployment {
            queues: Some(&app.queues),
            consumers: app.consumers.as_ref(),
            recovery: app.recovery.as_ref().map(|r| r as &dyn Recovers),
        },
        request: None,
    };
    let asked = [firmspace::http::route_path(req).as_bytes(), body_bytes(req)];
    let key = RequestKey::Header(key);
    let done = command.perform(&env, &by, &key, &asked).await?;
    Ok(performed_response(&done))
}
