//! One `send_message` run: the outbound target (kept opened for a while), the claim on the run,
//! the call, and the settling of what the call told; never a blind resend.

use super::{Automation, Transient, TARGET_TTL};
use chrono::{DateTime, Utc};
use firmspace::effects::automation::{self, Rule};
use firmspace::effects::outbound::{OutboundTarget, Sent, State};
use firmspace::effects::runs::{self, Claim, Lease, RunState};
use firmspace::effects::worker::{Applied, WorkError};
use firmspace::effects::Fired;
use firmspace::ids::IntegrationId;
use firmspace::integrations::{self, Integration, Settings};
use firmspace::review::Reason;
use serde_json::json;
use std::time::Instant;

/// One outgoing call of a run: what it was for and where it went.
struct Attempt<'a> {
    rule: &'a Rule,
    integration_id: &'a IntegrationId,
    target: &'a OutboundTarget,
    fired: &'a Fired,
    key: &'a str,
    lease: &'a Lease,
}

impl Automation {
    /// The rule's organisation's integration `id` with its secrets opened, kept a while.
    pub(super) async fn integration(
        &self,
        rule: &Rule,
        id: &IntegrationId,
    ) -> Result<Option<Integration>, WorkError> {
        // Only the rule's own organisation's integration, cached or not.
        if id.org != rule.org {
            return Ok(None);
        }
        let cached = self
            .targets
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id.id)
            .filter(|(at, _)| at.elapsed() < TARGET_TTL)
            .map(|(_, integration)| integration.clone());
        if let Some(integration) = cached {
            return Ok(Some(integration));
        }
        let found = integrations::get_signing(&self.store, id, chrono::Utc::now()).await?;
        if let Some(integration) = &found {
            self.targets
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(id.id.clone(), (Instant::now(), integration.clone()));
        }
        Ok(found)
    }

    async fn target(&self, rule: &Rule, id: &IntegrationId) -> Result<OutboundTarget, WorkError> {
        match self.integration(rule, id).await?.map(|i| i.settings) {
            Some(Settings::Outbound(target)) => Ok(target),
            _ => Err(WorkError::permanent(
                Reason::UnknownIntegration,
                format!("rule {} names no outbound integration", rule.rule_id),
            )),
        }
    }

    /// The run's claim, its lease running from the moment it is taken.
    async fn claim(
        &self,
        rule: &Rule,
        event_key: &firmspace::ids::EventKey,
        request: runs::Request<'_>,
        now: DateTime<Utc>,
    ) -> Result<Claim, WorkError> {
        let hold = chrono::Duration::from_std(self.budget()).expect("a budget of seconds");
        let taken_at = chrono::Utc::now().max(now);
        let claim = runs::claim(
            &self.store,
            &rule.org,
            &rule.rule_id,
            event_key,
            taken_at,
            hold,
            Some(request),
        )
        .await?;
        Ok(claim)
    }

    pub(super) async fn send(
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
        let body = json!({"text": text, "rule_id": rule.rule_id, "event_key": event_key, "context": fired.context});
        let request = runs::Request {
            integration_id: &integration_id.id,
            body: &body,
        };
        let claim = self.claim(rule, event_key, request, now).await?;
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
        let run_key = automation::run_key(&attempt.rule.rule_id, &attempt.fired.event_key);
        match sent {
            Sent::Delivered => self.delivered(&attempt, now).await,
            Sent::NotDelivered(why) => {
                self.set(&attempt, RunState::NotSent, now).await?;
                Err(WorkError::transient(Transient(why)))
            }
            Sent::Rejected(code) => {
                self.set(&attempt, RunState::Failed, now).await?;
                Err(WorkError::permanent(
                    Reason::OutboundRejected,
                    format!("target answered {code} for run {run_key}"),
                ))
            }
            Sent::Unclear(why) => self.unclear(&attempt, &run_key, why, now).await,
        }
    }

    /// An outcome nobody can tell from the call: the target is asked; what it cannot say
    /// either is left for a person.
    async fn unclear(
        &self,
        attempt: &Attempt<'_>,
        run_key: &str,
        why: String,
        now: DateTime<Utc>,
    ) -> Result<(), WorkError> {
        match self.outbound.check(attempt.target, attempt.key).await {
            State::Delivered => self.delivered(attempt, now).await,
            State::NotDelivered => {
                self.set(attempt, RunState::NotSent, now).await?;
                Err(WorkError::transient(Transient(format!(
                    "{why}; target has no record of the key"
                ))))
            }
            State::Unknown => {
                if !self.set(attempt, RunState::NeedsCheck, now).await? {
                    // Another attempt holds the run now; it decides what a person must see.
                    return Ok(());
                }
                let detail = json!({"idempotency_key": attempt.key, "integration_id": attempt.integration_id});
                self.needs_check(attempt.rule, run_key, &why, detail, now)
                    .await
            }
        }
    }

    /// The run moved to `state` under the attempt's lease; `false` when the lease was lost.
    async fn set(
        &self,
        attempt: &Attempt<'_>,
        state: RunState,
        now: DateTime<Utc>,
    ) -> Result<bool, WorkError> {
        let rule = attempt.rule;
        let event_key = &attempt.fired.event_key;
        Ok(runs::set_state(
            &self.store,
            &rule.org,
            &rule.rule_id,
            event_key,
            attempt.lease,
            state,
            now,
        )
        .await?)
    }

    /// Delivered is a fact whoever holds the run now: `sent` even if the lease was lost.
    async fn delivered(&self, attempt: &Attempt<'_>, now: DateTime<Utc>) -> Result<(), WorkError> {
        if !self.set(attempt, RunState::Sent, now).await? {
            let rule = attempt.rule;
            runs::delivered(
                &self.store,
                &rule.org,
                &rule.rule_id,
                &attempt.fired.event_key,
                now,
            )
            .await?;
        }
        Ok(())
    }
}
