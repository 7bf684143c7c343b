//! One `reply` run: the conversation the trigger came from, the claim on the run, one send
//! through the channel's API, and the outgoing message stored once. Neither Telegram nor
//! WhatsApp takes an idempotency key, so an unclear send is never repeated: the run becomes
//! `needs_check` with a review item.

use super::{Automation, Transient};
use chrono::{DateTime, Utc};
use firmspace::effects::automation::{self, Rule};
use firmspace::effects::runs::{self, Claim, Lease, RunState};
use firmspace::effects::worker::{Applied, WorkError};
use firmspace::effects::{bounds, replies};
use firmspace::effects::{AssistedReply, Fired, Trigger};
use firmspace::ids::IntegrationId;
use firmspace::integrations::Settings;
use firmspace::messages::providers::MessageSettings;
use firmspace::messages::reply::{self, Replied};
use firmspace::messages::{self, Conversation};
use firmspace::review::Reason;
use serde_json::json;
use std::time::Duration;

impl Automation {
    /// An assistant's `reply` tool call: a run of the `assistant` rule for the call, through the
    /// same claim and send as a rule's reply, so a redelivered message sends nothing twice.
    pub(super) async fn assisted(
        &self,
        call: &AssistedReply,
        now: DateTime<Utc>,
        deadline: std::time::Instant,
    ) -> Result<Applied, WorkError> {
        if std::time::Instant::now() + self.reply_budget() > deadline {
            return Err(WorkError::transient(Transient(
                "not enough time left in this invocation for the reply".into(),
            )));
        }
        let (rule, fired) = automation::assisted_run(call);
        self.reply(&rule, &call.text, &fired, now).await
    }

    /// The longest one reply may take: the call and the store around it.
    pub(super) fn reply_budget(&self) -> Duration {
        self.apis.timeout + Duration::from_secs(2)
    }

    /// The conversation to answer: the trigger's own, or for a missed call the contact's latest
    /// conversation on a channel that can reply.
    async fn conversation_of(&self, fired: &Fired) -> Result<Option<Conversation>, WorkError> {
        let field = |name: &str| fired.context.get(name).and_then(|v| v.as_str());
        match (fired.trigger, field("conversation_id"), field("contact_id")) {
            (Trigger::MessageReceived, Some(id), _) => {
                Ok(messages::conversation(&self.store, &fired.org, id).await?)
            }
            // Through the contact's own list: found however many others wrote since.
            (Trigger::CallMissed, _, Some(contact)) => {
                Ok(messages::conversations_of(&self.store, &fired.org, contact)
                    .await?
                    .into_iter()
                    .find(|c| c.provider.can_reply()))
            }
            _ => Ok(None),
        }
    }

    /// The conversation a reply goes into, and its channel's settings: only a channel that
    /// can reply.
    async fn reply_target(
        &self,
        rule: &Rule,
        fired: &Fired,
    ) -> Result<Option<(Conversation, MessageSettings)>, WorkError> {
        let Some(conversation) = self.conversation_of(fired).await? else {
            return Ok(None);
        };
        let id = IntegrationId {
            org: conversation.org.clone(),
            id: conversation.integration_id.clone(),
        };
        Ok(
            match self.integration(rule, &id).await?.map(|i| i.settings) {
                Some(Settings::Messages(m)) if m.provider().can_reply() => Some((conversation, m)),
                _ => None,
            },
        )
    }

    pub(super) async fn reply(
        &self,
        rule: &Rule,
        text: &str,
        fired: &Fired,
        now: DateTime<Utc>,
    ) -> Result<Applied, WorkError> {
        let Some((conversation, settings)) = self.reply_target(rule, fired).await? else {
            return self.unsupported(rule, fired, now).await;
        };
        let hold = chrono::Duration::from_std(self.reply_budget()).expect("a budget of seconds");
        let (org, key, at) = (&rule.org, &fired.event_key, Utc::now().max(now));
        let claim = runs::claim(&self.store, org, &rule.rule_id, key, at, hold, None).await?;
        let (lease, replied) = match claim {
            Claim::Settled(state) => {
                tracing::info!(rule = %rule.rule_id, ?state, "reply already settled");
                return Ok(Applied::one(false));
            }
            Claim::Busy => {
                return Err(WorkError::transient(Transient(
                    "the reply is held by another attempt".into(),
                )))
            }
            Claim::Unclear(lease) => (
                lease,
                Replied::Unclear("an earlier attempt's outcome is unknown".into()),
            ),
            Claim::Fresh(lease) | Claim::Retry(lease) => {
                let run = automation::run_key(&rule.rule_id, key);
                if !bounds::admit_reply(&self.store, org, &conversation.id, &run, now).await? {
                    let of = (org, rule.rule_id.as_str(), key);
                    runs::skip(&self.store, of, &lease, "reply_cap", now).await?;
                    tracing::info!(%run, "reply skipped: the conversation is at its cap");
                    return Ok(Applied::one(false));
                }
                let replied = reply::send(&self.apis, &settings, &conversation, text).await;
                (lease, replied)
            }
        };
        self.settle_reply(
            rule,
            fired,
            &lease,
            &conversation,
            &settings,
            text,
            replied,
            now,
        )
        .await?;
        Ok(Applied::one(true))
    }

    /// A reply that cannot be sent on this channel: the run ends `failed`, and the rule is
    /// parked with a `reply_unsupported` review item.
    async fn unsupported(
        &self,
        rule: &Rule,
        fired: &Fired,
        now: DateTime<Utc>,
    ) -> Result<Applied, WorkError> {
        let (org, key) = (&rule.org, &fired.event_key);
        let hold = chrono::Duration::seconds(5);
        let claim = runs::claim(&self.store, org, &rule.rule_id, key, now, hold, None).await?;
        let (Claim::Fresh(lease) | Claim::Retry(lease) | Claim::Unclear(lease)) = claim else {
            return Ok(Applied::one(false));
        };
        let failed = RunState::Failed;
        runs::set_state(&self.store, org, &rule.rule_id, key, &lease, failed, now).await?;
        Err(WorkError::permanent(
            Reason::ReplyUnsupported,
            "no Telegram or WhatsApp conversation to reply in (the generic channel cannot reply)",
        ))
    }

    #[allow(clippy::too_many_arguments)]
    async fn settle_reply(
        &self,
        rule: &Rule,
        fired: &Fired,
        lease: &Lease,
        conversation: &Conversation,
        settings: &MessageSettings,
        text: &str,
        replied: Replied,
        now: DateTime<Utc>,
    ) -> Result<(), WorkError> {
        let event_key = &fired.event_key;
        let run_key = automation::run_key(&rule.rule_id, event_key);
        let (store, org, rule_id) = (&self.store, &rule.org, rule.rule_id.as_str());
        let settle = |state| runs::set_state(store, org, rule_id, event_key, lease, state, now);
        match replied {
            Replied::Sent(id) => {
                let run = (rule, fired, lease);
                replies::record(&self.store, run, (conversation, &id, text), now).await?;
                tracing::info!(%run_key, message = %id, "reply sent");
                Ok(())
            }
            Replied::NotSent(why) => {
                settle(RunState::NotSent).await?;
                Err(WorkError::transient(Transient(why)))
            }
            Replied::Rejected(why) => {
                settle(RunState::Failed).await?;
                Err(WorkError::permanent(
                    Reason::ReplyRejected,
                    format!("{why} for run {run_key}"),
                ))
            }
            Replied::Unclear(why) => {
                if !settle(RunState::NeedsCheck).await? {
                    return Ok(());
                }
                let detail = json!({
                    "conversation_id": conversation.id,
                    "provider": settings.provider(),
                    "text": text,
                });
                self.needs_check(rule, &run_key, &why, detail, now).await?;
                Ok(())
            }
        }
    }
}
