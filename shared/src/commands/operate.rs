//! The operator's commands on an organisation's records: a person's decision on a run that
//! needs a check, an integration paused or resumed, an integration's secrets rotated.

use super::answers;
use super::{Actor, Env};
use crate::effects::runs::RunState;
use crate::http::ApiError;
use crate::ids::IntegrationId;
use crate::integrations::rotation::{self, RotateError};
use crate::ops::answers::{IntegrationPaused, RunDecided};
use crate::ops::hold;
use crate::ops::runs::{self, Decided, Decision};
use crate::store::item::tag_name;
use secrecy::SecretString;
use serde_json::{json, Value};
use std::collections::HashMap;

/// The secrets of a rotation, by name, and how long the previous ones still verify.
#[derive(Debug)]
pub struct Rotation {
    pub secrets: HashMap<String, SecretString>,
    pub overlap: chrono::Duration,
}

fn publisher<'a, R>(env: &'a Env<'_, R>) -> Result<&'a crate::effects::queue::Publisher, ApiError> {
    env.publisher.ok_or_else(|| {
        ApiError::new(
            503,
            "queue_unavailable",
            "this function sends no consequences; retry through /ops",
        )
    })
}

fn run_state(state: String) -> Value {
    answers::json(&RunDecided { state })
}

fn conflict(code: &str, detail: &str, outcome: Value) -> (u16, Value) {
    (
        409,
        json!({"error": code, "detail": detail, "outcome": outcome}),
    )
}

/// `delivered` settles the run as sent and sends nothing; `resend` queues one more attempt.
pub(super) async fn decide<R>(
    env: &Env<'_, R>,
    by: &Actor,
    pk: &str,
    decision: Decision,
) -> Result<(u16, Value), ApiError> {
    let decided = runs::decide(env.store, publisher(env)?, by.org(), pk, decision, env.now)
        .await
        .map_err(|e| match e {
            runs::DecideError::Store(e) => ApiError::from(e),
            unqueued => ApiError::internal(&unqueued, true),
        })?;
    let state = |s: Option<RunState>| s.map_or(Value::Null, |s| json!(tag_name(&s)));
    Ok(match decided {
        Decided::Now(now) => (200, run_state(tag_name(&now))),
        Decided::Queued => (202, run_state("sending".to_owned())),
        Decided::Already(was) => conflict(
            "not_needs_check",
            "the run was decided before",
            json!({"state": state(was)}),
        ),
        Decided::NotFound => return Err(ApiError::not_found("run")),
        Decided::NotResendable => conflict(
            "not_resendable",
            "this run's request was not kept (a reply, or a run from before); settle it as delivered after checking",
            json!({"state": "needs_check"}),
        ),
    })
}

/// An integration's consequences held (`paused`), or sent on.
pub(super) async fn pause<R>(
    env: &Env<'_, R>,
    by: &Actor,
    id: &IntegrationId,
    paused: bool,
) -> Result<(u16, Value), ApiError> {
    let store = env.store;
    let pk = crate::integrations::integration_pk(id);
    store
        .get(&pk)
        .await?
        .ok_or_else(|| ApiError::not_found("integration"))?;
    if paused {
        let changed = hold::pause(store, id, &by.id(), env.now).await?;
        let answer = IntegrationPaused {
            integration_id: id.id.clone(),
            paused: true,
            changed,
        };
        return Ok((200, answers::json(&answer)));
    }
    let resumed = hold::resume(store, publisher(env)?, id, &by.id(), env.now)
        .await
        .map_err(|e| match e {
            hold::ResumeError::Unsettled(_) => ApiError::new(503, "held_not_listed", e.to_string()),
            hold::ResumeError::Gone => ApiError::not_found("integration"),
            other => ApiError::internal(&other, true),
        })?;
    Ok((200, answers::json(&resumed)))
}

/// Every secret the integration holds, replaced, the previous ones verifying for `overlap`.
pub(super) async fn rotate<R>(
    env: &Env<'_, R>,
    id: &IntegrationId,
    rotation: Rotation,
) -> Result<(u16, Value), ApiError> {
    if let Some(key) = rotation.secrets.get("api_key") {
        super::setup::stripe_key(secrecy::ExposeSecret::expose_secret(key))?;
    }
    let state = rotation::rotate(env.store, id, rotation.secrets, rotation.overlap, env.now)
        .await
        .map_err(refused)?;
    let answer = answers::SecretsRotated {
        integration_id: id.id.clone(),
        secrets: state,
    };
    Ok((200, answers::json(&answer)))
}

fn refused(e: RotateError) -> ApiError {
    match e {
        RotateError::NotFound => ApiError::not_found("integration"),
        RotateError::NothingToRotate => ApiError::new(
            409,
            "no_secrets",
            "this integration holds no secret to rotate",
        ),
        RotateError::Names(_) => ApiError::bad_request("invalid_secrets", e.to_string()),
        RotateError::Moved => ApiError::new(
            409,
            "rotation_in_progress",
            "another rotation changed the secrets meanwhile; read the integration and ask again",
        ),
        RotateError::Store(e) => e.into(),
    }
}
