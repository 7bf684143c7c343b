//! The operator's commands on an organisation's records: a person's decision on a run that
//! needs a check, an integration paused or resumed, an integration's secrets rotated, an
//! event's missing consequences sent again (one event's, or a kind's in a window); and on the
//! deployment's own parts, the admin's alone: a DLQ's messages moved back to their queue, a
//! worker paused or resumed.

use super::answers;
use super::{Actor, Env};
use crate::commands::{owned, Command, Ran, Replies, RequestKey, Whose};
use crate::commands::{Made, Refused};
use crate::effects::runs::RunState;
use crate::ids::IntegrationId;
use crate::integrations::integration_pk;
use crate::integrations::rotation::{self, RotateError};
use crate::ops::answers::{ConsumerState, IntegrationPaused, Moved, ReplayCounted, ReplaySent};
use crate::ops::answers::{Replayed, RunDecided, Sent};
use crate::ops::events::{self, ReplayError, Window};
use crate::ops::hold;
use crate::ops::runs::{self, DecideError, Decision};
use crate::orgs::Scope;
use crate::payments::recover::Recovered;
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

fn publisher<'a, R>(env: &'a Env<'_, R>) -> Result<&'a crate::effects::queue::Publisher, Refused> {
    env.publisher.ok_or_else(|| {
        Refused::unavailable(
            "queue_unavailable",
            "this function sends no consequences; retry through /ops",
        )
    })
}

fn run_state(state: String) -> RunDecided {
    RunDecided { state }
}

/// A conflict naming the run's state as its `outcome`.
fn conflict(code: &'static str, detail: &str, outcome: Value) -> Refused {
    Refused::conflict(code, detail).with("outcome", outcome)
}

/// A person's decision on a run that needs a check.
#[derive(Debug)]
pub struct DecideRun {
    pub pk: String,
    pub decision: Decision,
}

/// `delivered` settles the run as sent and sends nothing; `resend` queues one more attempt.
impl Command for DecideRun {
    type Answer = RunDecided;
    const NAME: &'static str = "decide_run";
    const REQUIRES: &'static [Scope] = &[Scope::Ops];

    async fn run<R: Replies>(
        self,
        env: &Env<'_, R>,
        by: &Actor,
        _key: &RequestKey,
    ) -> Ran<RunDecided> {
        owned(by, &self.pk, "RUN#", "run")?;
        let (pk, decision) = (self.pk.as_str(), self.decision);
        let state = |s: Option<RunState>| s.map_or(Value::Null, |s| json!(tag_name(&s)));
        let now = match runs::decide(env.store, publisher(env)?, by.org(), pk, decision, env.now).await {
            Ok(written) => written.into_value(),
            Err(DecideError::Store(e)) => return Err(Refused::from(e)),
            Err(DecideError::NotFound) => return Err(Refused::not_found("run")),
            Err(DecideError::Already(was)) => return Err(conflict(
                "not_needs_check",
                "the run was decided before",
                json!({"state": state(was)}),
            )),
            Err(DecideError::NotResendable) => return Err(conflict(
                "not_resendable",
                "this run's request was not kept (a reply, or a run from before); settle it as delivered after checking",
                json!({"state": "needs_check"}),
            )),
            Err(unqueued @ DecideError::Unqueued(_)) => return Err(Refused::failed(&unqueued, true)),
        };
        // A resend is taken, not done: the automation worker sends it.
        let made = match now {
            RunState::Sending => Made::Accepted,
            _ => Made::Done,
        };
        Ok((made, run_state(tag_name(&now))))
    }
}

/// An integration's consequences held, or sent on.
#[derive(Debug)]
pub struct PauseIntegration {
    pub id: Which,
    pub paused: bool,
}

/// Which integration an action names: by its id, or (a resumption) by the digest its
/// organisation's paused list names it by (a monobank integration's id is a credential).
#[derive(Debug)]
pub enum Which {
    Id(IntegrationId),
    Listed(String),
}

impl Which {
    /// The integration, in the actor's organisation: 404 when none is so named.
    async fn id<R>(self, env: &Env<'_, R>, by: &Actor) -> Result<IntegrationId, Refused> {
        let id = match self {
            Self::Id(id) => id,
            // Found on the paused list, an index: a pause of a moment ago may not be on it yet.
            Self::Listed(digest) => hold::paused_by_digest(env.store, by.org(), &digest)
                .await?
                .ok_or_else(|| Refused::not_found("integration").on_a_lagging_read())?,
        };
        owned(by, &integration_pk(&id), "INTEGRATION#", "integration")?;
        Ok(id)
    }
}

/// An integration's consequences held (`paused`), or sent on.
impl Command for PauseIntegration {
    type Answer = answers::PauseAnswer;
    const NAME: &'static str = "pause_integration";
    const REQUIRES: &'static [Scope] = &[Scope::Ops];

    async fn run<R: Replies>(
        self,
        env: &Env<'_, R>,
        by: &Actor,
        _key: &RequestKey,
    ) -> Ran<answers::PauseAnswer> {
        let (id, paused) = (&self.id.id(env, by).await?, self.paused);
        let store = env.store;
        let pk = crate::integrations::integration_pk(id);
        store
            .get(&pk)
            .await?
            .ok_or_else(|| Refused::not_found("integration"))?;
        if paused {
            let changed = hold::pause(store, id, &by.id(), env.now).await?;
            let answer = IntegrationPaused {
                integration_id: id.id.clone(),
                paused: true,
                changed,
            };
            return Ok((Made::Done, answers::PauseAnswer::Paused(answer)));
        }
        let resumed = hold::resume(store, publisher(env)?, id, &by.id(), env.now)
            .await
            .map_err(|e| match e {
                hold::ResumeError::Unsettled(_) => {
                    Refused::unavailable("held_not_listed", e.to_string())
                }
                hold::ResumeError::Gone => Refused::not_found("integration"),
                other => Refused::failed(&other, true),
            })?;
        Ok((Made::Done, answers::PauseAnswer::Resumed(resumed)))
    }
}

/// Every secret of an integration replaced.
#[derive(Debug)]
pub struct RotateSecrets {
    pub id: IntegrationId,
    pub rotation: Rotation,
}

/// Every secret the integration holds, replaced, the previous ones verifying for `overlap`.
impl Command for RotateSecrets {
    type Answer = answers::SecretsRotated;
    const NAME: &'static str = "rotate_secrets";
    const REQUIRES: &'static [Scope] = &[Scope::Write, Scope::Ops];

    async fn run<R: Replies>(
        self,
        env: &Env<'_, R>,
        by: &Actor,
        _key: &RequestKey,
    ) -> Ran<answers::SecretsRotated> {
        owned(by, &integration_pk(&self.id), "INTEGRATION#", "integration")?;
        let (id, rotation) = (&self.id, self.rotation);
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
        Ok((Made::Done, answer))
    }
}

fn refused(e: RotateError) -> Refused {
    match e {
        RotateError::NotFound => Refused::not_found("integration"),
        RotateError::NothingToRotate => {
            Refused::conflict("no_secrets", "this integration holds no secret to rotate")
        }
        RotateError::Names(_) => Refused::invalid("invalid_secrets", e.to_string()),
        RotateError::Moved => Refused::conflict(
            "rotation_in_progress",
            "another rotation changed the secrets meanwhile; read the integration and ask again",
        ),
        RotateError::Store(e) => e.into(),
    }
}

/// A stored event's missing consequences derived again and sent: what happened is absorbed by
/// its key, so a second replay sends nothing that happened meanwhile.
#[derive(Debug)]
pub struct ReplayEvent {
    /// The event's item, of the actor's organisation.
    pub pk: String,
}

impl Command for ReplayEvent {
    type Answer = Sent;
    const NAME: &'static str = "replay_event";
    const REQUIRES: &'static [Scope] = &[Scope::Ops];

    async fn run<R: Replies>(self, env: &Env<'_, R>, by: &Actor, _key: &RequestKey) -> Ran<Sent> {
        // One of the actor's organisation's events, whatever an adapter decoded.
        if !events::EVENT_ITEMS
            .iter()
            .any(|kind| owned(by, &self.pk, kind, "event").is_ok())
        {
            return Err(Refused::not_found("event"));
        }
        match events::replay(env.store, publisher(env)?, &self.pk).await {
            Ok(sent) => Ok((Made::Done, Sent { sent })),
            Err(ReplayError::NotFound) => Err(Refused::not_found("event")),
            Err(ReplayError::Store(e)) => Err(e.into()),
            Err(e @ ReplayError::Queue(_)) => Err(Refused::failed(&e, true)),
        }
    }
}

/// A kind's events in a window of the actor's organisation: their missing consequences
/// counted (`dry_run`, 20 s at most a call) or sent, each once (15 s at most a call); each
/// call answers `more` with a `cursor` to go on.
#[derive(Debug)]
pub struct ReplayWindow {
    pub window: Window,
    pub dry_run: bool,
    pub cursor: Option<String>,
}

impl Command for ReplayWindow {
    type Answer = Replayed;
    const NAME: &'static str = "replay_window";
    const REQUIRES: &'static [Scope] = &[Scope::Ops];

    async fn run<R: Replies>(
        self,
        env: &Env<'_, R>,
        by: &Actor,
        _key: &RequestKey,
    ) -> Ran<Replayed> {
        let (org, cursor) = (by.org(), self.cursor.as_deref());
        // A cursor no replay gave reads as a malformed key: the caller's to fix.
        let refused = |e: crate::store::StoreError| match e {
            crate::store::StoreError::Malformed { .. } if cursor.is_some() => {
                Refused::invalid("invalid_cursor", "cursor is not one this replay gave")
            }
            other => other.into(),
        };
        if self.dry_run {
            let found = events::dry_run(env.store, org, &self.window, cursor)
                .await
                .map_err(refused)?;
            return Ok((
                Made::Done,
                Replayed::Counted(ReplayCounted {
                    events: found.events,
                    missing: found.missing,
                    dry_run: true,
                    more: found.cursor.is_some(),
                    cursor: found.cursor,
                }),
            ));
        }
        let window = (org, &self.window);
        let done = events::replay_window(env.store, publisher(env)?, window, cursor, env.now)
            .await
            .map_err(|e| match e {
                ReplayError::Store(e) => refused(e),
                other => Refused::failed(&other, true),
            })?;
        Ok((
            Made::Done,
            Replayed::Sent(ReplaySent {
                events: done.events,
                sent: done.sent,
                more: done.cursor.is_some(),
                cursor: done.cursor,
            }),
        ))
    }
}

/// A DLQ's messages (all, or the named ones) moved back to their queue, within the gateway's
/// 30 s: what is left is moved by the next redrive (`more`).
#[derive(Debug)]
pub struct RedriveDeadLetters {
    /// The queue's name (`notifications`, `automation`, `matching`).
    pub queue: String,
    /// 1 to 1,000 message ids; none: every message.
    pub ids: Option<Vec<String>>,
}

impl Command for RedriveDeadLetters {
    type Answer = Moved;
    const NAME: &'static str = "redrive_dead_letters";
    const REQUIRES: &'static [Scope] = &[Scope::Ops];
    const WHOSE: Whose = Whose::Deployment;

    async fn run<R: Replies>(self, env: &Env<'_, R>, _by: &Actor, _key: &RequestKey) -> Ran<Moved> {
        let queues = env
            .deployment
            .queues
            .ok_or_else(|| Refused::not_found("queue"))?;
        let pair = queues
            .pair(&self.queue)
            .ok_or_else(|| Refused::not_found("queue"))?;
        let budget = std::time::Duration::from_secs(20);
        let (moved, more) = queues
            .redrive(pair, self.ids.as_deref(), budget)
            .await
            .map_err(|e| Refused::failed(&e, true))?;
        Ok((Made::Done, Moved { moved, more }))
    }
}

/// A worker paused (its SQS event source mapping disabled: its messages wait in its queue) or
/// resumed.
#[derive(Debug)]
pub struct PauseWorker {
    pub name: String,
    pub paused: bool,
}

impl Command for PauseWorker {
    type Answer = ConsumerState;
    const NAME: &'static str = "pause_worker";
    const REQUIRES: &'static [Scope] = &[Scope::Ops];
    const WHOSE: Whose = Whose::Deployment;

    async fn run<R: Replies>(
        self,
        env: &Env<'_, R>,
        by: &Actor,
        _key: &RequestKey,
    ) -> Ran<ConsumerState> {
        let consumers = env
            .deployment
            .consumers
            .ok_or_else(|| Refused::not_found("consumer"))?;
        let consumer = consumers
            .find(&self.name)
            .ok_or_else(|| Refused::not_found("consumer"))?;
        let state = consumers
            .set(env.store, consumer, self.paused, &by.id(), env.now)
            .await
            .map_err(|e| Refused::failed(&e, true))?;
        Ok((Made::Done, state))
    }
}

/// What a provider sent in a window, asked of the provider again and booked once, unless a
/// person paused the import worker: the import function does it (it alone opens the provider's
/// key), reached through the deployment's [`Recovers`], and its answer is this command's.
#[derive(Debug)]
pub struct RecoverWindow(pub crate::ops::recover::Ask);

impl Command for RecoverWindow {
    /// What the provider listed and what was booked of it (a statement page's rows, or a
    /// Stripe window's events).
    type Answer = Recovered;
    const NAME: &'static str = "recover_window";
    const REQUIRES: &'static [Scope] = &[Scope::Ops];

    async fn run<R: Replies>(
        self,
        env: &Env<'_, R>,
        by: &Actor,
        _key: &RequestKey,
    ) -> Ran<Recovered> {
        let recovery = env.deployment.recovery.ok_or_else(|| {
            Refused::unavailable("unavailable", "no recovery is set up for this deployment")
        })?;
        IntegrationId::parse(&self.0.integration_id)
            .ok()
            .filter(|id| id.org == *by.org())
            .ok_or_else(|| Refused::not_found("integration"))?;
        if crate::ops::consumers::is_paused(env.store, "bank-import").await? {
            return Err(Refused::conflict(
                "paused",
                "bank-import is paused: recover once it is resumed",
            ));
        }
        Ok((Made::Done, recovery.recover(&self.0).await?))
    }
}

/// Where a recovery is handed: the function that opens the provider's key, whose answer the
/// edge that reaches it reads into this command's answer or refusal (`http::recovery`), so no
/// transport's words are spoken here.
pub trait Recovers: Sync {
    fn recover<'a>(
        &'a self,
        ask: &'a crate::ops::recover::Ask,
    ) -> futures::future::BoxFuture<'a, Result<Recovered, Refused>>;
}
