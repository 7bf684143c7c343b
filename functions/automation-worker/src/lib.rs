#![forbid(unsafe_code)]
//! Automation queue → each rule for the trigger runs once per triggering event: `create_task`
//! writes a task whose id is derived from the run; `send_message` calls the outbound target with
//! the run's `Idempotency-Key` and never resends blindly after an unclear outcome.

use anyhow::Context;
use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use chrono::Utc;
use firmspace::config::Config;
use firmspace::effects::automation::{self, Action, Rule};
use firmspace::effects::outbound::{Outbound, Sent, State};
use firmspace::effects::runs::{self, Claim};
use firmspace::effects::worker::{self, WorkError};
use firmspace::effects::{Consequence, TRIGGERS};
use firmspace::ids::{IntegrationId, OrgId};
use firmspace::orgs;
use firmspace::review::ReviewItem;
use firmspace::store::Store;
use lambda_runtime::LambdaEvent;
use serde_json::{json, Value};
use std::time::Duration;

pub struct App {
    store: Store,
    outbound: Outbound,
    max_receives: u32,
}

/// A failure that a later attempt may not have.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Transient(String);

impl App {
    pub fn new(store: Store, outbound: Outbound, max_receives: u32) -> Self {
        Self {
            store,
            outbound,
            max_receives,
        }
    }

    pub async fn from_env() -> anyhow::Result<Self> {
        let config = Config::from_env().context("loading configuration")?;
        Ok(Self::new(
            Store::from_config(&config).await,
            Outbound::new(
                Duration::from_millis(config.outbound_timeout_ms),
                config.allows_loopback(),
            ),
            config.max_receive_count,
        ))
    }

    pub async fn handle(
        &self,
        event: LambdaEvent<SqsEvent>,
    ) -> Result<SqsBatchResponse, lambda_runtime::Error> {
        Ok(self.process(event.payload).await)
    }

    pub async fn process(&self, event: SqsEvent) -> SqsBatchResponse {
        worker::process(&self.store, "automation", self.max_receives, event, |c| {
            self.apply(c)
        })
        .await
    }

    async fn apply(&self, consequence: Consequence) -> Result<(), WorkError> {
        let Consequence::Trigger {
            org,
            trigger,
            event_key,
            context,
            ..
        } = consequence
        else {
            return Err(permanent(
                "wrong_queue",
                "the automation queue carries only triggers",
            ));
        };
        let org = OrgId::parse(&org).map_err(|e| permanent("malformed_message", e.to_string()))?;
        if !TRIGGERS.contains(&trigger.as_str()) {
            return Err(permanent(
                "unknown_trigger",
                format!("no trigger {trigger:?}"),
            ));
        }
        for rule in automation::rules_for(&self.store, &org, &trigger).await? {
            match &rule.action {
                Action::CreateTask { title } => {
                    let created =
                        automation::create_task(&self.store, &rule, title, &event_key, Utc::now())
                            .await?;
                    tracing::info!(rule = %rule.rule_id, created, "task run");
                }
                Action::SendMessage {
                    integration_id,
                    text,
                } => {
                    self.send(&rule, integration_id, text, &event_key, &context)
                        .await?;
                }
            }
        }
        Ok(())
    }

    async fn send(
        &self,
        rule: &Rule,
        integration_id: &str,
        text: &str,
        event_key: &str,
        context: &Value,
    ) -> Result<(), WorkError> {
        let target = match IntegrationId::parse(integration_id) {
            Ok(id) if id.org == rule.org => orgs::get_integration(&self.store, &id).await?,
            _ => None,
        }
        .filter(|i| i.kind == "outbound")
        .ok_or_else(|| {
            permanent(
                "unknown_integration",
                format!("rule {} names no outbound integration", rule.rule_id),
            )
        })?;
        let run_key = automation::run_key(&rule.rule_id, event_key);
        let key = automation::idempotency_key(&rule.org, &run_key);
        let now = Utc::now();
        let claim = runs::claim(&self.store, &rule.org, &rule.rule_id, event_key, now).await?;
        let sent = match claim {
            Claim::Settled(state) => {
                tracing::info!(%run_key, %state, "run already settled");
                return Ok(());
            }
            Claim::Unclear => Sent::Unclear("an earlier attempt's outcome is unknown".into()),
            Claim::Fresh | Claim::Retry => {
                let body = json!({"text": text, "rule_id": rule.rule_id, "event_key": event_key, "context": context});
                self.outbound
                    .send(&target, &key, &body, now.timestamp())
                    .await
            }
        };
        let settle = |state: &'static str| {
            runs::set_state(
                &self.store,
                &rule.org,
                &rule.rule_id,
                event_key,
                state,
                Utc::now(),
            )
        };
        match sent {
            Sent::Delivered => Ok(settle("sent").await?),
            Sent::NotDelivered(why) => {
                settle("not_sent").await?;
                Err(WorkError::transient(Transient(why)))
            }
            Sent::Rejected(code) => {
                settle("failed").await?;
                Err(permanent(
                    "outbound_rejected",
                    format!("target answered {code} for run {run_key}"),
                ))
            }
            Sent::Unclear(why) => match self.outbound.check(&target, &key).await {
                State::Delivered => Ok(settle("sent").await?),
                State::NotDelivered => {
                    settle("not_sent").await?;
                    Err(WorkError::transient(Transient(format!(
                        "{why}; target has no record of the key"
                    ))))
                }
                State::Unknown => {
                    settle("needs_check").await?;
                    tracing::warn!(%run_key, %why, "outgoing call in an unknown state");
                    ReviewItem {
                        org: rule.org.clone(),
                        kind: "automation".into(),
                        reason: "needs_check".into(),
                        key: run_key.clone(),
                        at: Utc::now(),
                        detail: json!({"why": why, "idempotency_key": key, "integration_id": integration_id}),
                    }
                    .put(&self.store)
                    .await?;
                    Ok(())
                }
            },
        }
    }
}

fn permanent(reason: &'static str, detail: impl Into<String>) -> WorkError {
    WorkError::Permanent {
        reason,
        detail: detail.into(),
    }
}
