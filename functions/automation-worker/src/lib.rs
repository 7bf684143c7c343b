#![forbid(unsafe_code)]
//! Automation queue → each rule for the trigger runs once per triggering event: `create_task`
//! writes a task whose id is derived from the run; `send_message` calls the outbound target with
//! the run's `Idempotency-Key` and never resends blindly after an unclear outcome.
//!
//! Each rule runs on its own: one rule's failure parks that rule (or retries the message) and the
//! others still run. A send is held by a lease on its run, so a second copy of the trigger can
//! neither resend nor settle it meanwhile, and it starts only when the invocation has time left
//! for the call and the status check (an attempt cut off mid-call would look unclear).

use chrono::{DateTime, Utc};
use firmspace::config::{parse_var, ConfigError};
use firmspace::effects::automation::{self, Action, Rule};
use firmspace::effects::outbound::Outbound;
use firmspace::effects::worker::{Applied, SqsApp, WorkError, Worker};
use firmspace::effects::{Automated, Fired};
use firmspace::integrations::Integration;
use firmspace::messages::media::Apis;
use firmspace::review::{Kind, Reason, ReviewItem};
use firmspace::store::Store;
use serde_json::json;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub struct Automation {
    store: Store,
    outbound: Outbound,
    /// The messengers' APIs, for `reply`.
    apis: Apis,
    /// Integrations with their secrets opened, kept for `TARGET_TTL` in the warm function: a
    /// send costs a KMS `Decrypt` only when it loads its integration.
    targets: Mutex<HashMap<String, (Instant, Integration)>>,
    /// Amazon Bedrock, for the `ai` action; without it an `ai` run fails with the reason.
    model: Option<aws_sdk_bedrockruntime::Client>,
    /// The `ai` action's bounds.
    ai: AiBounds,
}

/// What bounds the `ai` action in this deployment.
pub use firmspace::commands::model::Bounds as AiBounds;

/// How long a warm function keeps an opened outbound target.
const TARGET_TTL: Duration = Duration::from_secs(60);

impl Automation {
    pub fn new(store: Store, outbound: Outbound, apis: Apis) -> Self {
        Self {
            store,
            outbound,
            apis,
            targets: Mutex::new(HashMap::new()),
            model: None,
            ai: AiBounds::default(),
        }
    }

    /// The same worker asking this Bedrock client for `ai` runs, within `bounds`.
    pub fn with_model(mut self, model: aws_sdk_bedrockruntime::Client, bounds: AiBounds) -> Self {
        self.model = Some(model);
        self.ai = bounds;
        self
    }
}

pub type App = SqsApp<Automation>;

/// A failure that a later attempt may not have.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Transient(String);

mod ai;
mod reply;
mod resend;
mod send;

pub fn app(store: Store, outbound: Outbound, apis: Apis, max_receives: u32) -> App {
    SqsApp::new(
        Automation::new(store.clone(), outbound, apis),
        store,
        max_receives,
    )
}

/// `app`, with a Bedrock client for the `ai` action.
pub fn app_with_model(
    store: Store,
    outbound: Outbound,
    apis: Apis,
    (model, bounds): (aws_sdk_bedrockruntime::Client, AiBounds),
    max_receives: u32,
) -> App {
    SqsApp::new(
        Automation::new(store.clone(), outbound, apis).with_model(model, bounds),
        store,
        max_receives,
    )
}

/// `OUTBOUND_TIMEOUT_MS` (default 5000) bounds each outgoing call; the messengers' APIs are
/// configured as `Apis::from_env` says; the `ai` action asks Amazon Bedrock in the function's
/// region (`AWS_ENDPOINT_URL` where one is set).
pub async fn from_env() -> Result<App, ConfigError> {
    let bedrock =
        firmspace::aws::bedrock(firmspace::config::var("AWS_ENDPOINT_URL").as_deref()).await;
    SqsApp::from_env(|config, store| {
        let timeout = Duration::from_millis(parse_var("OUTBOUND_TIMEOUT_MS", 5000)?);
        Ok(Automation::new(
            store,
            Outbound::new(timeout, config.allows_loopback()),
            Apis::from_env(config.allows_loopback())?,
        )
        .with_model(bedrock, AiBounds::from_env()?))
    })
    .await
}

impl Worker for Automation {
    type Job = Automated;
    const KIND: Kind = Kind::Automation;

    async fn apply(&self, job: Automated, now: DateTime<Utc>) -> Result<Applied, WorkError> {
        let unbounded = Instant::now() + Duration::from_secs(24 * 3600);
        self.apply_until(job, now, unbounded).await
    }

    /// A trigger's rules, or a person's resend.
    async fn apply_until(
        &self,
        job: Automated,
        now: DateTime<Utc>,
        deadline: Instant,
    ) -> Result<Applied, WorkError> {
        match job {
            Automated::Fired(fired) => self.fired(fired, now, deadline).await,
            Automated::Resend(resend) => self.resend(&resend, now, deadline).await,
            Automated::Assisted(reply) => self.assisted(&reply, now, deadline).await,
        }
    }
}

impl Automation {
    /// Runs every rule; a rule that fails for good is parked on its own, and a rule that may
    /// succeed later makes the message come back (the rules already run are no-ops then).
    async fn fired(
        &self,
        fired: Fired,
        now: DateTime<Utc>,
        deadline: Instant,
    ) -> Result<Applied, WorkError> {
        let mut applied = Applied::default();
        let mut retry = None;
        for rule in automation::rules_for(&self.store, &fired.org, fired.trigger).await? {
            match self.run(&rule, &fired, now, deadline).await {
                Ok(one) => applied = applied.and(one),
                Err(WorkError::Permanent { reason, detail }) => {
                    self.park(&rule, &fired, reason, detail, now).await?;
                }
                Err(transient) => {
                    tracing::warn!(rule = %rule.rule_id, error.message = %transient, "rule will run again");
                    retry.get_or_insert(transient);
                }
            }
        }
        match retry {
            Some(err) => Err(err),
            None => {
                automation::mark_handled(&self.store, &fired, now).await?;
                Ok(applied)
            }
        }
    }
}

impl Automation {
    async fn run(
        &self,
        rule: &Rule,
        fired: &Fired,
        now: DateTime<Utc>,
        deadline: Instant,
    ) -> Result<Applied, WorkError> {
        let in_time = |budget: Duration, what: &str| match Instant::now() + budget > deadline {
            true => Err(WorkError::transient(Transient(format!(
                "not enough time left in this invocation for {what}"
            )))),
            false => Ok(()),
        };
        match &rule.action {
            Action::CreateTask { title } => {
                let key = &fired.event_key;
                let created = automation::create_task(&self.store, rule, title, key, now).await?;
                tracing::info!(rule = %rule.rule_id, created, "task run");
                Ok(Applied::one(created))
            }
            Action::SendMessage {
                integration_id,
                text,
            } => {
                in_time(self.budget(), "the call and its check")?;
                self.send(rule, integration_id, text, fired, now).await
            }
            Action::Ai { .. } => {
                in_time(self.reply_budget() * 2, "the model and its tools")?;
                self.ai(rule, fired, now, deadline).await
            }
            Action::Reply { text } => {
                in_time(self.reply_budget(), "the reply")?;
                self.reply(rule, text, fired, now).await
            }
        }
    }

    /// The longest one send may take: the call, the status check, and the store around them.
    fn budget(&self) -> Duration {
        self.outbound.timeout
            + self.outbound.timeout.max(Duration::from_secs(2))
            + Duration::from_secs(2)
    }

    /// An outgoing call in an unknown state: never repeated, a person looks (one review item
    /// per run).
    async fn needs_check(
        &self,
        rule: &Rule,
        run_key: &str,
        why: &str,
        mut detail: serde_json::Value,
        now: DateTime<Utc>,
    ) -> Result<(), WorkError> {
        tracing::warn!(%run_key, %why, "outgoing call in an unknown state; not sent again");
        detail["why"] = json!(why);
        self.file(rule, (Reason::NeedsCheck, run_key.to_owned()), detail, now)
            .await
    }

    /// One rule that cannot succeed: a review item for a person, the other rules go on.
    async fn park(
        &self,
        rule: &Rule,
        fired: &Fired,
        reason: Reason,
        detail: String,
        now: DateTime<Utc>,
    ) -> Result<(), WorkError> {
        tracing::warn!(rule = %rule.rule_id, %reason, %detail, "rule failed; parked for review");
        let key = automation::run_key(&rule.rule_id, &fired.event_key);
        let detail = json!({"error": detail, "rule_id": rule.rule_id});
        self.file(rule, (reason, key), detail, now).await
    }

    /// One review item of the rule's organisation, once per (reason, key).
    async fn file(
        &self,
        rule: &Rule,
        (reason, key): (Reason, String),
        detail: serde_json::Value,
        now: DateTime<Utc>,
    ) -> Result<(), WorkError> {
        let org = rule.org.clone();
        let kind = Kind::Automation;
        let item = ReviewItem {
            org,
            kind,
            reason,
            key,
            at: now,
            detail,
        };
        item.put(&self.store).await?;
        Ok(())
    }
}
