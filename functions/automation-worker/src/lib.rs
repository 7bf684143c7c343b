#![forbid(unsafe_code)]
//! Automation queue → each rule for the trigger runs once per triggering event: `create_task`
//! writes a task whose id is derived from the run; `send_message` calls the outbound target with
//! the run's `Idempotency-Key` and never resends blindly after an unclear outcome.

use chrono::{DateTime, Utc};
use firmspace::config::{parse_var, ConfigError};
use firmspace::effects::automation::{self, Action, Rule};
use firmspace::effects::outbound::{Outbound, OutboundTarget, Sent, State};
use firmspace::effects::runs::{self, Claim, RunState};
use firmspace::effects::worker::{Applied, SqsApp, WorkError, Worker};
use firmspace::effects::Fired;
use firmspace::ids::IntegrationId;
use firmspace::integrations::{self, Settings};
use firmspace::review::ReviewItem;
use firmspace::store::Store;
use serde_json::json;
use std::time::Duration;

pub struct Automation {
    store: Store,
    outbound: Outbound,
}

pub type App = SqsApp<Automation>;

/// One outgoing call of a run: what it was for and where it went.
struct Attempt<'a> {
    rule: &'a Rule,
    integration_id: &'a IntegrationId,
    target: &'a OutboundTarget,
    fired: &'a Fired,
    key: &'a str,
}

/// A failure that a later attempt may not have.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Transient(String);

pub fn app(store: Store, outbound: Outbound, max_receives: u32) -> App {
    SqsApp::new(
        Automation {
            store: store.clone(),
            outbound,
        },
        store,
        max_receives,
    )
}

/// `OUTBOUND_TIMEOUT_MS` (default 5000) bounds each outgoing call.
pub async fn from_env() -> Result<App, ConfigError> {
    SqsApp::from_env(|config, store| {
        let timeout = Duration::from_millis(parse_var("OUTBOUND_TIMEOUT_MS", 5000)?);
        Ok(Automation {
            store,
            outbound: Outbound::new(timeout, config.allows_loopback()),
        })
    })
    .await
}

impl Worker for Automation {
    type Job = Fired;
    const NAME: &'static str = "automation";

    async fn apply(&self, fired: Fired, now: DateTime<Utc>) -> Result<Applied, WorkError> {
        let mut applied = Applied::default();
        for rule in automation::rules_for(&self.store, &fired.org, fired.trigger).await? {
            let one = match &rule.action {
                Action::CreateTask { title } => {
                    let created =
                        automation::create_task(&self.store, &rule, title, &fired.event_key, now)
                            .await?;
                    tracing::info!(rule = %rule.rule_id, created, "task run");
                    Applied::one(created)
                }
                Action::SendMessage {
                    integration_id,
                    text,
                } => self.send(&rule, integration_id, text, &fired, now).await?,
            };
            applied = applied.and(one);
        }
        Ok(applied)
    }
}

impl Automation {
    async fn target(&self, rule: &Rule, id: &IntegrationId) -> Result<OutboundTarget, WorkError> {
        let found = if id.org == rule.org {
            integrations::get(&self.store, id).await?
        } else {
            None
        };
        match found.map(|i| i.settings) {
            Some(Settings::Outbound(target)) => Ok(target),
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
        let sent = match runs::claim(&self.store, &rule.org, &rule.rule_id, event_key, now).await? {
            Claim::Settled(state) => {
                tracing::info!(%run_key, ?state, "run already settled");
                return Ok(Applied::one(false));
            }
            Claim::Unclear => Sent::Unclear("an earlier attempt's outcome is unknown".into()),
            Claim::Fresh | Claim::Retry => {
                let body = json!({"text": text, "rule_id": rule.rule_id, "event_key": event_key, "context": fired.context});
                self.outbound
                    .send(&target, &key, &body, now.timestamp())
                    .await
            }
        };
        let attempt = Attempt {
            rule,
            integration_id,
            target: &target,
            fired,
            key: &key,
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
        } = attempt;
        let event_key = &fired.event_key;
        let run_key = automation::run_key(&rule.rule_id, event_key);
        let settle =
            |state| runs::set_state(&self.store, &rule.org, &rule.rule_id, event_key, state, now);
        match sent {
            Sent::Delivered => settle(RunState::Sent).await?,
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
                State::Delivered => settle(RunState::Sent).await?,
                State::NotDelivered => {
                    settle(RunState::NotSent).await?;
                    return Err(WorkError::transient(Transient(format!(
                        "{why}; target has no record of the key"
                    ))));
                }
                State::Unknown => {
                    settle(RunState::NeedsCheck).await?;
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
