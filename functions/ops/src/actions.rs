//! The operator's actions, each once per `Idempotency-Key`: a repeat gets the stored
//! answer, a repeat while the first runs gets 409 `request_in_progress`, the same key with
//! another request 409 `idempotency_key_reused`. Each action is safe twice over besides: a
//! redrive moves what is in the DLQ now, a replay's consequences are absorbed by their keys,
//! and a resolution or a decision is a conditional move out of `open` or `needs_check`.

use crate::views::kind_named;
use crate::{App, Who};
use chrono::{DateTime, Utc};
use firmspace::commands::asks;
use firmspace::commands::requests::Request as Asked;
use firmspace::commands::Refused;
use firmspace::commands::{perform, Actor, AnyCommand, Deployment, Env, Queued, RequestKey};
use firmspace::effects::worker::operator_org;
use firmspace::http::{body_bytes, parse_json, ApiError};
use firmspace::http::{done_response, outcome_of};
use firmspace::ops::events::{Window, EVENT_ITEMS, WINDOW_MAX};
use firmspace::ops::ids;
use firmspace::ops::review::NOTE_MAX;
use firmspace::ops::runs::Decision;
use lambda_http::{Body, Request, Response};
use serde_json::Value;

/// An integration as a request names it: by its id, or (resuming) by the digest the paused
/// list shows, found in the organisation's paused list when the action runs.
enum IntegrationRef {
    Id(firmspace::ids::IntegrationId),
    Digest(String),
}

/// One action, checked: everything it needs was read from the request before the key is
/// claimed, so a refused request claims nothing.
enum Action {
    Redrive {
        queue: String,
        ids: Option<Vec<String>>,
    },
    Replay {
        org: firmspace::ids::OrgId,
        pk: String,
    },
    /// The missing consequences of a kind's events in a window, sent (or counted: `dry_run`).
    ReplayWindow {
        org: firmspace::ids::OrgId,
        window: Window,
        dry_run: bool,
        cursor: Option<String>,
    },
    Resolve {
        org: firmspace::ids::OrgId,
        pk: String,
        note: String,
        decision: Option<firmspace::commands::Decision>,
        named: firmspace::commands::Named,
    },
    Decide {
        org: firmspace::ids::OrgId,
        pk: String,
        decision: Decision,
    },
    /// A worker paused (its event source mapping disabled) or resumed.
    Consumer { name: String, paused: bool },
    /// An integration's consequences held, or sent on.
    Integration { id: IntegrationRef, paused: bool },
    /// What a provider sent in a window, asked of the provider and booked once.
    Recover(firmspace::ops::recover::Ask),
}

fn unknown(what: &str) -> ApiError {
    ApiError::not_found(what)
}

/// A redrive: a queue's name, and all its dead letters or 1 to 1000 named. Whose it is and
/// whether the queue is ours, `RedriveDeadLetters` says (403 for a key before anything else).
fn redrive(queue: &str, body: &[u8]) -> Result<Action, ApiError> {
    let ids = match body.is_empty() {
        true => None,
        false => parse_json::<asks::Redrive>(body)?.ids,
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
    Ok(Action::Redrive {
        queue: queue.to_owned(),
        ids,
    })
}

/// The request's action, or why it is refused.
fn action(who: &Who, req: &Request, segments: &[&str]) -> Result<Action, ApiError> {
    let body = body_bytes(req);
    let owner = who.owner();
    match segments {
        ["ops", "dlq", queue, "redrive"] => redrive(queue, body),
        ["ops", "events", "replay"] => window(who, req, body),
        ["ops", "events", id, "replay"] => {
            let (org, pk) = ids::decode(id, owner, &EVENT_ITEMS).ok_or_else(|| unknown("event"))?;
            Ok(Action::Replay { org, pk })
        }
        ["ops", "review", id, "resolve"] => {
            let (org, pk) =
                ids::decode(id, owner, &["REVIEW#"]).ok_or_else(|| unknown("review item"))?;
            let (note, decision, named) = resolution(body)?;
            Ok(Action::Resolve {
                org,
                pk,
                note,
                decision,
                named,
            })
        }
        ["ops", "consumers" | "integrations", _, "pause" | "resume"] => pausing(who, segments),
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
            Ok(Action::Decide { org, pk, decision })
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
    Ok(Action::ReplayWindow {
        org,
        window: Window { kind, from, to },
        dry_run: asked.dry_run,
        cursor: asked.cursor,
    })
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
    Ok(Action::Recover(firmspace::ops::recover::Ask {
        org: id.org.to_string(),
        integration_id: id.to_string(),
        from,
        to,
        cursor: asked.cursor,
    }))
}

/// Pausing or resuming a worker (admin) or an integration (its organisation's key, or the admin).
fn pausing(who: &Who, segments: &[&str]) -> Result<Action, ApiError> {
    let paused = segments.last() == Some(&"pause");
    match segments {
        // The admin's: `PauseWorker` holds it to that.
        ["ops", "consumers", name, _] => Ok(Action::Consumer {
            name: (*name).to_owned(),
            paused,
        }),
        ["ops", "integrations", raw, _] => {
            let owner = who.owner();
            let id = firmspace::ids::IntegrationId::parse(raw)
                .ok()
                .filter(|id| owner.is_none_or(|org| *org == id.org))
                .map(IntegrationRef::Id)
                .or_else(|| {
                    // A paused integration as its list names it (resumption only).
                    let digest = (!paused && raw.starts_with("int_") && raw.len() <= 40)
                        .then(|| (*raw).to_owned())?;
                    Some(IntegrationRef::Digest(digest))
                })
                .ok_or_else(|| unknown("integration"))?;
            Ok(Action::Integration { id, paused })
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
    let key = firmspace::http::idempotency_key(req)?;
    let mut action = action(who, req, segments)?;
    if let Action::Integration {
        id: IntegrationRef::Digest(digest),
        ..
    } = &action
    {
        let org = who.one(req)?;
        let found = firmspace::ops::hold::paused_by_digest(&app.store, &org, digest)
            .await?
            .ok_or_else(|| unknown("integration"))?;
        if let Action::Integration { id, .. } = &mut action {
            *id = IntegrationRef::Id(found);
        }
    }
    if let Some((org, command)) = action_command(&action) {
        return perform_as(app, who, req, key, (org, command), now).await;
    }
    // A recovery: events booked through the webhook's own path, not a person's command.
    let Action::Recover(ask) = action else {
        return Err(unknown("route"));
    };
    let by = who.by();
    // The admin's key is claimed per organisation the recovery is of (after a space no key
    // holds): the same key for another organisation is another request.
    let key = match who {
        Who::Admin(_) => format!("{key} {}", ask.org),
        Who::Org(_) => key,
    };
    let asked = Asked {
        by: &by,
        shared: None,
        key: &key,
        fingerprint: firmspace::commands::fingerprint(&segments.join("/"), &[body_bytes(req)]),
    };
    // The import function answers HTTP itself: its status is the outcome kept.
    let work = || async {
        let (status, answer) = recover(app, &ask).await.map_err(Refused::from)?;
        Ok((outcome_of(status), answer))
    };
    let (outcome, answer, repeat) = asked.once_telling(&app.store, now, work).await?;
    Ok(firmspace::http::replayed_response(
        firmspace::http::status(outcome),
        &answer,
        repeat,
    ))
}

/// Every action but a recovery is a command (`firmspace::commands`), which claims the key
/// itself: the organisation it acts in (the deployment's own parts: the operator's), and the
/// command.
fn action_command(action: &Action) -> Option<(firmspace::ids::OrgId, AnyCommand)> {
    Some(match action {
        Action::Resolve {
            org,
            pk,
            note,
            decision,
            named,
        } => (
            org.clone(),
            firmspace::commands::review::ResolveReview {
                pk: pk.clone(),
                note: note.clone(),
                decision: *decision,
                named: named.clone(),
            }
            .into(),
        ),
        Action::Decide { org, pk, decision } => (
            org.clone(),
            firmspace::commands::operate::DecideRun {
                pk: pk.clone(),
                decision: *decision,
            }
            .into(),
        ),
        Action::Integration {
            id: IntegrationRef::Id(id),
            paused,
        } => (
            id.org.clone(),
            firmspace::commands::operate::PauseIntegration {
                id: id.clone(),
                paused: *paused,
            }
            .into(),
        ),
        Action::Redrive { queue, ids } => (
            operator_org(),
            firmspace::commands::operate::RedriveDeadLetters {
                queue: queue.clone(),
                ids: ids.clone(),
            }
            .into(),
        ),
        Action::Consumer { name, paused } => (
            operator_org(),
            firmspace::commands::operate::PauseWorker {
                name: name.clone(),
                paused: *paused,
            }
            .into(),
        ),
        Action::Replay { org, pk } => (
            org.clone(),
            firmspace::commands::operate::ReplayEvent { pk: pk.clone() }.into(),
        ),
        Action::ReplayWindow {
            org,
            window,
            dry_run,
            cursor,
        } => (
            org.clone(),
            firmspace::commands::operate::ReplayWindow {
                window: *window,
                dry_run: *dry_run,
                cursor: cursor.clone(),
            }
            .into(),
        ),
        _ => return None,
    })
}

async fn perform_as(
    app: &App,
    who: &Who,
    req: &Request,
    key: String,
    (org, command): (firmspace::ids::OrgId, AnyCommand),
    now: DateTime<Utc>,
) -> Result<Response<Body>, ApiError> {
    // The admin's key is claimed per organisation it acts in (after a space no key holds): the
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
        replies: &Queued(None),
        publisher: Some(&app.publisher),
        site: None,
        imports: Default::default(),
        deployment: Deployment {
            queues: Some(&app.queues),
            consumers: app.consumers.as_ref(),
        },
    };
    let asked = [firmspace::http::route_path(req).as_bytes(), body_bytes(req)];
    let done = perform(&env, &by, &RequestKey::Header(key), command, &asked).await?;
    Ok(done_response(&done))
}

/// A provider's window recovered by the import function, which opens the key: unless a person
/// paused it.
async fn recover(app: &App, ask: &firmspace::ops::recover::Ask) -> Result<(u16, Value), ApiError> {
    let recovery = app.recovery.as_ref().ok_or_else(|| {
        ApiError::new(
            503,
            "unavailable",
            "no recovery is set up for this deployment",
        )
    })?;
    if firmspace::ops::consumers::is_paused(&app.store, "bank-import").await? {
        return Err(ApiError::new(
            409,
            "paused",
            "bank-import is paused: recover once it is resumed",
        ));
    }
    let (status, answer) = recovery.ask(ask).await;
    let digest = firmspace::ids::IntegrationId::parse(&ask.integration_id)
        .map(|id| id.digest())
        .unwrap_or_default();
    tracing::info!(integration = %digest, status, "recovery asked");
    Ok((status, answer))
}
