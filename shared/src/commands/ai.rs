//! The AI step (a rule's `ai` action): a model decides what to do about an event, and acts once
//! however often its message comes. It is the command side's third kind of caller: each of the
//! model's tool calls is a command it asks for as `Actor::Model`. The run is claimed like any run (one attempt at a time, under a lease); the
//! bounds are checked before the model is asked (the conversation's reply cap, the
//! organisation's hourly budget); the model's answer is stored on the run before anything acts
//! on it, so a retry reads it and never asks again; each tool call is a command performed as
//! `Actor::Model`, keyed by (run, tool call): a payment becomes a proposal for a person, a call
//! that is refused is recorded as refused, and the run always settles with its calls' outcomes.

use super::model::{self, Answer, Asked, Bounds, Question};
use super::{Actor, Env, Input, Replies, RequestKey};
use crate::commands::Refused;
use crate::effects::automation::{self, Action, Rule, Tool};
use crate::effects::bounds;
use crate::effects::runs::{self, Claim, Lease, RunState};
use crate::effects::worker::{Applied, WorkError};
use crate::effects::Fired;
use crate::ids::{EventKey, ExternalId};
use crate::review::{Kind, Reason, ReviewItem};
use crate::store::item::s;
use crate::store::{Cond, Store, StoreError, Update};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::time::Duration;

/// A failure that a later attempt may not have.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Transient(String);

/// What the AI step runs with: the store, the model's client, the deployment's bounds, and how
/// its replies leave (the automation worker sends them into the trigger's conversation).
pub struct Step<'a, R> {
    pub store: &'a Store,
    pub client: Option<&'a aws_sdk_bedrockruntime::Client>,
    pub bounds: &'a Bounds,
    pub replies: &'a R,
    /// How long the model may take: under the invocation's time left.
    pub timeout: Duration,
    /// When the invocation ends, and what one tool call may take (a reply's send and its
    /// record): a call that could not finish by then is not begun.
    pub deadline: (std::time::Instant, Duration),
}

/// At most this many of the model's tool calls act in one run; the rest are `ignored`.
pub const TOOL_CALLS_MAX: usize = 5;
/// The model's input: the event and at most this many of its conversation's latest messages,
/// in at most `INPUT_MAX` bytes.
pub const MESSAGES_MAX: usize = 20;
pub const INPUT_MAX: usize = 16 * 1024;
/// How long one attempt holds the run: the model's call and the tools after it.
const HOLD_SECS: i64 = 60;

/// An `ai` run held by this attempt.
struct Run<'a> {
    rule: &'a Rule,
    key: &'a EventKey,
    lease: Lease,
    /// `{rule_id}:{event_key}`.
    name: String,
}

impl Run<'_> {
    fn pk(&self) -> String {
        runs::run_pk(&self.rule.org, &self.name)
    }

    /// Writes `update` on the run while this attempt holds it: `false` when it no longer does.
    async fn keep(&self, store: &Store, update: Update) -> Result<bool, StoreError> {
        let held = update.when(Cond::Equals("lease".into(), s(self.lease.token())));
        store.update_if(&self.pk(), &held).await
    }

    async fn settle(
        &self,
        store: &Store,
        state: RunState,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let (org, rule) = (&self.rule.org, &self.rule.rule_id);
        runs::set_state(store, org, rule, self.key, &self.lease, state, now).await
    }
}

/// A tool call's own key within the run: a digest of the model's id for it.
fn call_key(run: &str, call_id: &str) -> String {
    hex::encode(Sha256::digest(format!("{run}|{call_id}")))[..24].to_owned()
}

/// What a performed tool call came to: its outcome and whether it acted; a failure a retry may
/// get past brings the message back.
fn settled(
    call_id: &str,
    (name, proposes): (&str, bool),
    done: Result<super::Performed<Value>, Refused>,
) -> Result<(Value, bool), WorkError> {
    Ok(match done {
        Ok(done) if done.outcome().is_made() => {
            let shown = if proposes { "proposed" } else { "done" };
            (outcome(call_id, name, shown, None), true)
        }
        Ok(super::Performed::Now { .. }) => {
            (outcome(call_id, name, "refused", Some("refused")), false)
        }
        Ok(super::Performed::Again(kept)) => {
            (outcome(call_id, name, "refused", Some(kept.code())), false)
        }
        Err(e) if e.passing() => return Err(WorkError::transient(Transient(e.detail))),
        Err(e) => (outcome(call_id, name, "refused", Some(e.code)), false),
    })
}

/// One tool call's outcome, as `/ops/runs` lists it.
fn outcome(id: &str, tool: &str, outcome: &str, error: Option<&str>) -> Value {
    let mut shown = json!({"id": id, "tool": tool, "outcome": outcome});
    if let Some(error) = error {
        shown["error"] = json!(error);
    }
    shown
}

impl<R: Replies> Step<'_, R> {
    /// Runs `rule`'s AI step for `fired`, once.
    pub async fn run(
        &self,
        rule: &Rule,
        fired: &Fired,
        now: DateTime<Utc>,
    ) -> Result<Applied, WorkError> {
        let hold = chrono::Duration::seconds(HOLD_SECS);
        let (org, key) = (&rule.org, &fired.event_key);
        let claim = runs::claim(self.store, org, &rule.rule_id, key, now, hold, None).await?;
        let lease = match claim {
            Claim::Fresh(lease) | Claim::Retry(lease) | Claim::Unclear(lease) => lease,
            Claim::Busy => {
                return Err(WorkError::transient(Transient(
                    "another attempt holds this ai run".into(),
                )))
            }
            Claim::Settled(_) => return Ok(Applied::default()),
        };
        let run = Run {
            rule,
            key,
            lease,
            name: automation::run_key(&rule.rule_id, key),
        };
        let Some(answer) = self.answer_of(&run, fired, now).await? else {
            return Ok(Applied::default());
        };
        let mut applied = Applied::default();
        let mut calls = Vec::new();
        for (i, (id, name, input)) in answer.calls.iter().enumerate() {
            if i >= TOOL_CALLS_MAX {
                calls.push(outcome(id, name, "ignored", Some("more than 5 calls")));
                continue;
            }
            // Too little time for one more: the message comes back, the model's answer is read
            // from its run, and the calls done are absorbed by their keys.
            let (ends, one_call) = self.deadline;
            if std::time::Instant::now() + one_call > ends {
                return Err(WorkError::transient(Transient(
                    "no time left in the invocation for the run's next tool call".into(),
                )));
            }
            let (shown, acted) = self.act(&run, fired, id, name, input, now).await?;
            applied = applied.and(Applied::one(acted));
            calls.push(shown);
        }
        let kept = Update::new().set("calls", s(Value::Array(calls).to_string()));
        run.keep(self.store, kept).await?;
        run.settle(self.store, RunState::Done, now).await?;
        tracing::info!(run = %run.name, calls = answer.calls.len(), tokens = %answer.tokens, "ai run done");
        Ok(applied)
    }

    /// Why the run may not ask the model now, checked before it does: its conversation at
    /// the reply cap (when the rule gives `reply`), or the organisation's hour spent.
    async fn bound(
        &self,
        run: &Run<'_>,
        fired: &Fired,
        now: DateTime<Utc>,
    ) -> Result<Option<&'static str>, WorkError> {
        let replies =
            matches!(&run.rule.action, Action::Ai { tools, .. } if tools.contains(&Tool::Reply));
        let conversation = fired.context.get("conversation_id").and_then(Value::as_str);
        if let (true, Some(id)) = (replies, conversation) {
            let org = &run.rule.org;
            if bounds::replies_in_window(self.store, org, id, now).await? >= bounds::REPLIES_MAX {
                return Ok(Some("reply_cap"));
            }
        }
        if !bounds::spend_ai_run(self.store, &run.rule.org, self.bounds.runs_per_hour, now).await? {
            let hour = now.format("%Y-%m-%dT%H").to_string();
            let item = ReviewItem {
                org: run.rule.org.clone(),
                kind: Kind::Automation,
                reason: Reason::AiBudget,
                key: hour,
                at: now,
                detail: json!({"runs_per_hour": self.bounds.runs_per_hour, "rule_id": run.rule.rule_id}),
            };
            item.put(self.store).await?;
            return Ok(Some("ai_budget"));
        }
        Ok(None)
    }

    /// The run's answer: the one stored on it (a retry never asks again), or the model's now,
    /// stored before anything acts on it while this attempt holds the run. `None` when a bound
    /// skipped the run. A model that cannot answer now gives the run back (`not_sent`); one
    /// that refuses fails it with the reason.
    async fn answer_of(
        &self,
        run: &Run<'_>,
        fired: &Fired,
        now: DateTime<Utc>,
    ) -> Result<Option<Answer>, WorkError> {
        let stored = self.store.get(&run.pk()).await?;
        if let Some(raw) = stored
            .as_ref()
            .and_then(|i| crate::store::item::Read::opt_str(i, "answer"))
        {
            let stored = serde_json::from_str(raw).unwrap_or(Value::Null);
            return Ok(Some(Answer::from_json(&stored)));
        }
        if let Some(why) = self.bound(run, fired, now).await? {
            let of = (&run.rule.org, run.rule.rule_id.as_str(), run.key);
            runs::skip(self.store, of, &run.lease, why, now).await?;
            tracing::info!(run = %run.name, why, "ai run skipped");
            return Ok(None);
        }
        let answer = match self.ask(run.rule, fired).await {
            Ok(answer) => answer,
            Err(Asked::Retry(why)) => {
                run.settle(self.store, RunState::NotSent, now).await?;
                return Err(WorkError::transient(Transient(why)));
            }
            Err(Asked::Refused(why)) => {
                run.keep(self.store, Update::new().set("reason", s(&why)))
                    .await?;
                run.settle(self.store, RunState::Failed, now).await?;
                return Err(WorkError::Permanent {
                    reason: Reason::ModelRefused,
                    detail: format!("the model refused: {why}"),
                });
            }
        };
        let kept = Update::new()
            .set("answer", s(answer.to_json().to_string()))
            .set("tokens", s(answer.tokens.to_string()));
        if !run.keep(self.store, kept).await? {
            return Err(WorkError::transient(Transient(
                "the ai run's lease ran out before its answer was kept".into(),
            )));
        }
        Ok(Some(answer))
    }

    /// One tool call, performed as the model's command: its outcome, and whether it acted.
    async fn act(
        &self,
        run: &Run<'_>,
        fired: &Fired,
        call_id: &str,
        name: &str,
        input: &Value,
        now: DateTime<Utc>,
    ) -> Result<(Value, bool), WorkError> {
        let rule = run.rule;
        let Action::Ai { tools, .. } = &rule.action else {
            return Ok((outcome(call_id, name, "ignored", None), false));
        };
        let Some(tool) = Tool::parse(name).filter(|t| tools.contains(t)) else {
            tracing::warn!(run = %run.name, tool = %name, "the model called a tool it was not given");
            return Ok((
                outcome(call_id, name, "ignored", Some("not a tool of this rule")),
                false,
            ));
        };
        let key = ExternalId::parse("call", &call_key(&run.name, call_id))
            .map_err(|e| WorkError::transient(Transient(e.to_string())))?;
        let by = Actor::Model {
            org: rule.org.clone(),
            rule_id: rule.rule_id.clone(),
            event_key: fired.event_key.clone(),
            cause: fired.context.clone(),
        };
        let json = input.to_string();
        let env = Env {
            store: self.store,
            now,
            replies: self.replies,
            publisher: None,
            site: None,
            imports: Default::default(),
            deployment: Default::default(),
            request: None,
        };
        let asked = Input {
            tool,
            json: &json,
            org: &rule.org,
        }
        .command();
        let key = RequestKey::ToolCall(key);
        let done = match asked {
            Ok(command) => command.perform(&env, &by, &key, &[json.as_bytes()]).await,
            Err(refused) => Err(refused),
        };
        settled(call_id, (name, tool == Tool::RegisterPayment), done)
    }

    /// Asks the rule's model, within the allow-list, its token bound and the time left.
    async fn ask(&self, rule: &Rule, fired: &Fired) -> Result<Answer, Asked> {
        let Action::Ai {
            model,
            instructions,
            tools,
            max_tokens,
        } = &rule.action
        else {
            return Err(Asked::Refused("not an ai run".into()));
        };
        let client =
            (self.client).ok_or_else(|| Asked::Refused("no model client is configured".into()))?;
        if !self.bounds.models.allows(model) {
            return Err(Asked::Refused(format!(
                "the model {model} is not on this deployment's allow-list"
            )));
        }
        let input = self
            .input(fired)
            .await
            .map_err(|e| Asked::Retry(e.to_string()))?;
        let question = Question {
            model,
            instructions,
            tools,
            input,
            max_tokens: max_tokens.unwrap_or(model::MAX_TOKENS_DEFAULT),
            timeout: self.timeout.min(self.bounds.timeout),
        };
        model::ask(client, question).await
    }

    /// The event and at most the latest 20 messages of its conversation, in at most 16 KB, as
    /// one JSON document: a customer's words only as string values in it.
    async fn input(&self, fired: &Fired) -> Result<String, StoreError> {
        let conversation = fired.context.get("conversation_id").and_then(Value::as_str);
        let mut messages: Vec<Value> = match conversation {
            Some(id) => crate::messages::messages(self.store, &fired.org, id)
                .await?
                .iter()
                .rev()
                .take(MESSAGES_MAX)
                .rev()
                .map(|m| json!({"direction": m.direction, "text": m.text, "at": crate::time::format(m.at)}))
                .collect(),
            None => Vec::new(),
        };
        loop {
            let input = json!({"trigger": fired.trigger, "event_key": fired.event_key,
                "context": fired.context, "conversation": messages})
            .to_string();
            if input.len() <= INPUT_MAX || messages.is_empty() {
                return Ok(input.chars().take(INPUT_MAX).collect());
            }
            messages.remove(0);
        }
    }
}
