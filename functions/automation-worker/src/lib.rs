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
use firmspace::effects::outbound::{Outbound, OutboundTarget, Sent, State};
use firmspace::effects::runs::{self, Claim, Lease, RunState};
use firmspace::effects::worker::{Applied, SqsApp, WorkError, Worker};
use firmspace::effects::Fired;
use firmspace::ids::IntegrationId;
use firmspace::integrations::{self, Settings};
use firmspace::review::ReviewItem;
use firmspace::store::Store;
use serde_json::json;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub struct Automation {
    store: Store,
    outbound: Outbound,
    /// Outbound targets with their secrets opened, kept for `TARGET_TTL` in the warm function:
    /// a send costs a KMS `Decrypt` only when it loads its target.
    targets: Mutex<HashMap<String, (Instant, OutboundTarget)>>,
}

/// How long a warm function keeps an opened outbound target.
const TARGET_TTL: Duration = Duration::from_secs(60);

impl Automation {
    pub fn new(store: Store, outbound: Outbound) -> Self {
        Self {
            store,
            outbound,
            targets: Mutex::new(HashMap::new()),
        }
    }
}

pub type App = SqsApp<Automation>;

/// One outgoing call of a run: what it was for and where it went.
struct Attempt<'a> {
    rule: &'a Rule,
    integration_id: &'a IntegrationId,
    target: &'a OutboundTarget,
    fired: &'a Fired,
    key: &'a str,
    lease: &'a Lease,
}

/// A failure that a later attempt may not have.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Transient(String);

pub fn app(store: Store, outbound: Outbound, max_receives: u32) -> App {
    SqsApp::new(
        Automation::new(store.clone(), outbound),
        store,
        max_receives,
    )
}

/// `OUTBOUND_TIMEOUT_MS` (default 5000) bounds each outgoing call.
pub async fn from_env() -> Result<App, ConfigError> {
    SqsApp::from_env(|config, store| {
        let timeout = Duration::from_millis(parse_var("OUTBOUND_TIMEOUT_MS", 5000)?);
        Ok(Automation::new(
            store,
            Outbound::new(timeout, config.allows_loopback()),
        ))
    })
    .await
}

impl Worker for Automation {
    type Job = Fired;
    const NAME: &'static str = "automation";

    async fn apply(&self, fired: Fired, now: DateTime<Utc>) -> Result<Applied, WorkError> {
        let unbounded = Instant::now() + Duration::from_secs(24 * 3600);
        self.apply_until(fired, now, unbounded).await
    }

    /// Runs every rule; a rule that fails for good is parked on its own, and a rule that may
    /// succeed later makes the message come back (the rules already run are no-ops then).
    async fn apply_until(
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
            None => Ok(applied),
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
        match &rule.action {
            Action::CreateTask { title } => {
                let created =
                    automation::create_task(&self.store, rule, title, &fired.event_key, now)
                        .await?;
                tracing::info!(rule = %rule.rule_id, created, "task run");
                Ok(Applied::one(created))
            }
            Action::SendMessage {
                integration_id,
                text,
            } => {
                if Instant::now() + self.budget() > deadline {
                    return Err(WorkError::transient(Transient(
                        "not enough time left in this invocation for the call and its check".into(),
                    )));
                }
                self.send(rule, integration_id, text, fired, now).await
            }
        }
    }

    /// The longest one send may take: the call, the status check, and the store around them.
    fn budget(&self) -> Duration {
        self.outbound.timeout
            + self.outbound.timeout.max(Duration::from_secs(2))
            + Duration::from_secs(2)
    }

    /// One rule that cannot succeed: a review item for a person, the other rules go on.
    async fn park(
        &self,
        rule: &Rule,
        fired: &Fired,
        reason: &'static str,
        detail: String,
        now: DateTime<Utc>,
    ) -> Result<(), WorkError> {
        tracing::warn!(rule = %rule.rule_id, %reason, %detail, "rule failed; parked for review");
        ReviewItem {
            org: rule.org.clone(),
            kind: "automation".into(),
            reason: reason.into(),
            key: automation::run_key(&rule.rule_id, &fired.event_key),
            at: now,
            detail: json!({"error": detail, "rule_id": rule.rule_id}),
        }
        .put(&self.store)
        .await?;
        Ok(())
    }
    async fn target(&self, rule: &Rule, id: &IntegrationId) -> Result<OutboundTarget, WorkError> {
        let cached = |targets: &HashMap<String, (Instant, OutboundTarget)>| {
            targets
                .get(&id.id)
                .filter(|(at, _)| at.elapsed() < TARGET_TTL)
                .map(|(_, target)| target.clone())
        };
        // Only the rule's own organisation's integration, cached or not.
        let own = id.org == rule.org;
        if own {
            if let Some(target) = cached(&self.targets.lock().unwrap_or_else(|p| p.into_inner())) {
                return Ok(target);
            }
        }
        let found = if own {
            integrations::get(&self.store, id).await?
        } else {
            None
        };
        match found.map(|i| i.settings) {
            Some(Settings::Outbound(target)) => {
                self.targets
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(id.id.clone(), (Instant::now(), target.clone()));
                Ok(target)
            }
            _ => Err(WorkError::permanent(
                "unknown_integration",
                format!("rule {} names no outbound integration", rule.rule_id),
            )),
        }
    }

    async fn send(
        &self,
        rule: &Rule,
        integration_id: &IntegrationId,
        text: &str,
        fired: &Fired,
        now: DateTime<Utc>,
    ) -> Result<Applied, WorkError> {
        let target = self.target(rule, integration_id).await?;
        let event_key = &fired.event_key;
        let run_key = automation::run_key(&rule.rule_id, event_key);
        let key = automation::idempotency_key(&rule.org, &run_key);
        let hold = chrono::Duration::from_std(self.budget()).expect("a budget of seconds");
        // The lease runs from the moment it is taken, not from the batch's start.
        let taken_at = chrono::Utc::now().max(now);
        let claim = runs::claim(
            &self.store,
            &rule.org,
            &rule.rule_id,
            event_key,
            taken_at,
            hold,
        )
        .await?;
        let (lease, sent) = match claim {
            Claim::Settled(state) => {
                tracing::info!(%run_key, ?state, "run already settled");
                return Ok(Applied::one(false));
            }
            Claim::Busy => {
                return Err(WorkError::transient(Transient(format!(
                    "run {run_key} is held by another attempt"
                ))))
            }
            Claim::Unclear(lease) => (
                lease,
                Sent::Unclear("an earlier attempt's outcome is unknown".into()),
            ),
            Claim::Fresh(lease) | Claim::Retry(lease) => {
                let body = json!({"text": text, "rule_id": rule.rule_id, "event_key": event_key, "context": fired.context});
                let sent = self
                    .outbound
                    .send(&target, &key, &body, now.timestamp())
                    .await;
                (lease, sent)
            }
        };
        let attempt = Attempt {
            rule,
            integration_id,
            target: &target,
            fired,
            key: &key,
            lease: &lease,
        };
        self.settle(attempt, sent, now).await?;
        Ok(Applied::one(true))
    }

    /// Moves the run to what the attempt tells, asking the target when that is unclear; never
    /// resends blindly.
    async fn settle(
        &self,
        attempt: Attempt<'_>,
        sent: Sent,
        now: DateTime<Utc>,
    ) -> Result<(), WorkError> {
        let Attempt {
            rule,
            integration_id,
            target,
            fired,
            key,
            lease,
        } = attempt;
        let event_key = &fired.event_key;
        let run_key = automation::run_key(&rule.rule_id, event_key);
        let settle = |state| async move {
            runs::set_state(
                &self.store,
                &rule.org,
                &rule.rule_id,
                event_key,
                lease,
                state,
                now,
            )
            .await
        };
        // Delivered is a fact whoever holds the run now: `sent` even if the lease was lost.
        let delivered = || async {
            if !settle(RunState::Sent).await? {
                runs::delivered(&self.store, &rule.org, &rule.rule_id, event_key, now).await?;
            }
            Ok::<_, WorkError>(())
        };
        match sent {
            Sent::Delivered => delivered().await?,
            Sent::NotDelivered(why) => {
                settle(RunState::NotSent).await?;
                return Err(WorkError::transient(Transient(why)));
            }
            Sent::Rejected(code) => {
                settle(RunState::Failed).await?;
                return Err(WorkError::permanent(
                    "outbound_rejected",
                    format!("target answered {code} for run {run_key}"),
                ));
            }
            Sent::Unclear(why) => match self.outbound.check(target, key).await {
                State::Delivered => delivered().await?,
                State::NotDelivered => {
                    settle(RunState::NotSent).await?;
                    return Err(WorkError::transient(Transient(format!(
                        "{why}; target has no record of the key"
                    ))));
                }
                State::Unknown => {
                    if !settle(RunState::NeedsCheck).await? {
                        // Another attempt holds the run now; it decides what a person must see.
                        return Ok(());
                    }
                    tracing::warn!(%run_key, %why, "outgoing call in an unknown state");
                    ReviewItem {
                        org: rule.org.clone(),
                        kind: "automation".into(),
                        reason: "needs_check".into(),
                        key: run_key.clone(),
                        at: now,
                        detail: json!({"why": why, "idempotency_key": key, "integration_id": integration_id}),
                    }
                    .put(&self.store)
                    .await?;
                }
            },
        }
        Ok(())
    }
}
