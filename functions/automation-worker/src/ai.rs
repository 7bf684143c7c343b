//! The `ai` action as the automation worker runs it: the AI step (`firmspace::commands::ai`)
//! with this worker's model client and bounds, and its replies sent by this worker into the
//! trigger's own conversation, whatever the model named, each as the tool call's reply run.

use super::Automation;
use chrono::{DateTime, Utc};
use firmspace::commands::ai::Step;
use firmspace::commands::answers::ReplyState;
use firmspace::commands::Refused;
use firmspace::commands::Replies;
use firmspace::effects::automation::Rule;
use firmspace::effects::worker::{Applied, WorkError};
use firmspace::effects::{AssistedReply, Fired};
use firmspace::ids::EventKey;
use std::time::{Duration, Instant};

impl Automation {
    pub(super) async fn ai(
        &self,
        rule: &Rule,
        fired: &Fired,
        now: DateTime<Utc>,
        deadline: Instant,
    ) -> Result<Applied, WorkError> {
        let replies = ModelReplies {
            worker: self,
            rule,
            fired,
            now,
        };
        let left = deadline.saturating_duration_since(Instant::now());
        let step = Step {
            store: &self.store,
            client: self.model.as_ref(),
            bounds: &self.ai,
            replies: &replies,
            timeout: left.saturating_sub(self.reply_budget() + Duration::from_secs(2)),
            deadline: (deadline, self.reply_budget()),
        };
        step.run(rule, fired, now).await
    }
}

struct ModelReplies<'a> {
    worker: &'a Automation,
    rule: &'a Rule,
    fired: &'a Fired,
    now: DateTime<Utc>,
}

impl Replies for ModelReplies<'_> {
    async fn reply(&self, reply: AssistedReply) -> Result<ReplyState, Refused> {
        let key = format!("{}:{}", self.fired.event_key, reply.call_id);
        let fired = Fired {
            event_key: EventKey::new("ai", &key),
            ..self.fired.clone()
        };
        let sent = self
            .worker
            .reply(self.rule, &reply.text, &fired, self.now)
            .await;
        match sent {
            Ok(_) => Ok(ReplyState::Sent),
            // A reply that can never be sent is a person's matter, as a rule's own reply is:
            // one review item of the run (however many replies the model asked), and the
            // model is told it was refused.
            Err(WorkError::Permanent { reason, detail }) => {
                let run = self.fired;
                let parked = self
                    .worker
                    .park(self.rule, run, reason, detail.clone(), self.now);
                if let Err(e) = parked.await {
                    return Err(Refused::unavailable("reply_unavailable", e.to_string()));
                }
                Err(Refused::conflict(reason.name(), detail))
            }
            Err(e) => Err(Refused::unavailable("reply_unavailable", e.to_string())),
        }
    }
}
