//! A person's resend, decided in the operator's view and carried out here, where the target's
//! secret is opened: the run is taken from the decision's lease, its kept request is sent once
//! with the run's idempotency key, and the run is settled by what the target told (asking its
//! status URL when the answer is unclear). A copy of the message finds the lease gone and
//! sends nothing.

use super::{Automation, Transient};
use chrono::{DateTime, Utc};
use firmspace::effects::automation::{idempotency_key, run_key};
use firmspace::effects::outbound::{Sent, State};
use firmspace::effects::runs::{self, RunState};
use firmspace::effects::worker::{Applied, WorkError};
use firmspace::effects::Resend;
use firmspace::ids::IntegrationId;
use firmspace::integrations::{self, Settings};
use firmspace::review::Reason;
use firmspace::store::item::{tag_name, Read};
use serde_json::Value;
use std::time::Instant;

impl Automation {
    pub(super) async fn resend(
        &self,
        resend: &Resend,
        now: DateTime<Utc>,
        deadline: Instant,
    ) -> Result<Applied, WorkError> {
        if Instant::now() + self.budget() > deadline {
            return Err(WorkError::transient(Transient(
                "not enough time left in this invocation for the resend and its check".into(),
            )));
        }
        let key = run_key(&resend.rule_id, &resend.event_key);
        let Some((target, body)) = self.kept_request(resend, &key).await? else {
            return Err(WorkError::permanent(
                Reason::UnknownIntegration,
                format!("run {key} keeps no request for an outbound integration"),
            ));
        };
        let hold = chrono::Duration::from_std(self.budget()).expect("a budget of seconds");
        let (org, rule_id, event_key) = (&resend.org, &resend.rule_id, &resend.event_key);
        let taken = runs::take_resend(
            &self.store,
            org,
            rule_id,
            event_key,
            &resend.lease,
            now,
            hold,
        )
        .await?;
        let Some(lease) = taken else {
            tracing::info!(run = %key, "resend already carried out or taken over; nothing sent");
            return Ok(Applied::one(false));
        };
        let idempotency = idempotency_key(org, &key);
        let state = match self
            .outbound
            .send(&target, &idempotency, &body, now.timestamp())
            .await
        {
            Sent::Delivered => RunState::Sent,
            Sent::Rejected(_) => RunState::Failed,
            // Not sent, or sent with no word: a person looks again, nothing is sent by itself.
            Sent::NotDelivered(_) => RunState::NeedsCheck,
            Sent::Unclear(_) => match self.outbound.check(&target, &idempotency).await {
                State::Delivered => RunState::Sent,
                State::NotDelivered | State::Unknown => RunState::NeedsCheck,
            },
        };
        tracing::info!(run = %key, state = %tag_name(&state), "resent for a person");
        runs::set_state(&self.store, org, rule_id, event_key, &lease, state, now).await?;
        Ok(Applied::one(true))
    }

    /// The run's kept request and its outbound target, opened.
    async fn kept_request(
        &self,
        resend: &Resend,
        key: &str,
    ) -> Result<Option<(firmspace::effects::outbound::OutboundTarget, Value)>, WorkError> {
        let pk = runs::run_pk(&resend.org, key);
        let Some(run) = self.store.get(&pk).await? else {
            return Ok(None);
        };
        let body = run
            .opt_str("request")
            .and_then(|r| serde_json::from_str::<Value>(r).ok());
        let target = match run.opt_str("integration_id").map(IntegrationId::parse) {
            Some(Ok(id)) if id.org == resend.org => {
                integrations::get_signing(&self.store, &id, chrono::Utc::now()).await?
            }
            _ => None,
        };
        Ok(match (body, target.map(|t| t.settings)) {
            (Some(body), Some(Settings::Outbound(target))) => Some((target, body)),
            _ => None,
        })
    }
}
