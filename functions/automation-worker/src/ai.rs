//! The `ai` action: a model (Amazon Bedrock's Converse) decides what to do about an event, and
//! acts once however often its message comes. The run is claimed like any run (one attempt at
//! a time, under a lease); the model's answer is stored on the run before anything acts on it,
//! so a retry reads it and never asks the model again (its second answer could differ); each
//! tool call is one effect keyed by (run, tool call): a reply is its own reply run (one send,
//! never blind), a task's id is derived from it, a payment's external id too. Tokens are kept
//! on the run.

use super::{Automation, Transient};
use aws_sdk_bedrockruntime::types::{
    ContentBlock, ConversationRole, Message, SystemContentBlock, Tool, ToolConfiguration,
    ToolInputSchema, ToolSpecification,
};
use aws_smithy_types::{Document, Number};
use chrono::{DateTime, Utc};
use firmspace::effects::automation::{self, Action, AiTool, Rule};
use firmspace::effects::runs::{self, Claim, Lease, RunState};
use firmspace::effects::worker::{Applied, WorkError};
use firmspace::effects::Fired;
use firmspace::ids::{EventKey, ExternalId};
use firmspace::payments::{register_payment, PaymentInput, Source};
use firmspace::review::Reason;
use firmspace::store::item::{s, Read};
use firmspace::store::{Cond, Store, StoreError, Update};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// At most this many of the model's tool calls act in one run.
pub const TOOL_CALLS_MAX: usize = 5;
/// The model's input: the event and at most this many of its conversation's latest messages,
/// in at most `INPUT_MAX` bytes.
pub const MESSAGES_MAX: usize = 20;
pub const INPUT_MAX: usize = 16 * 1024;
/// How long one attempt holds the run: the model's call and the tools after it.
const HOLD_SECS: i64 = 60;

/// What the model answered, as stored on the run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Answer {
    pub text: String,
    /// (tool call id, tool name, input).
    pub calls: Vec<(String, String, Value)>,
    pub tokens: Value,
}

impl Answer {
    fn to_json(&self) -> Value {
        let calls: Vec<Value> = self
            .calls
            .iter()
            .map(|(id, name, input)| json!({"id": id, "name": name, "input": input}))
            .collect();
        json!({"text": self.text, "tool_calls": calls, "tokens": self.tokens})
    }

    fn from_json(stored: &Value) -> Self {
        let calls = stored["tool_calls"]
            .as_array()
            .map(|calls| {
                calls
                    .iter()
                    .map(|c| {
                        let text = |k: &str| c[k].as_str().unwrap_or_default().to_owned();
                        (text("id"), text("name"), c["input"].clone())
                    })
                    .collect()
            })
            .unwrap_or_default();
        Self {
            text: stored["text"].as_str().unwrap_or_default().to_owned(),
            calls,
            tokens: stored["tokens"].clone(),
        }
    }
}

fn document(value: &Value) -> Document {
    match value {
        Value::Null => Document::Null,
        Value::Bool(b) => Document::Bool(*b),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => Document::Number(Number::PosInt(u)),
            (_, Some(i)) => Document::Number(Number::NegInt(i)),
            _ => Document::Number(Number::Float(n.as_f64().unwrap_or_default())),
        },
        Value::String(s) => Document::String(s.clone()),
        Value::Array(items) => Document::Array(items.iter().map(document).collect()),
        Value::Object(map) => {
            Document::Object(map.iter().map(|(k, v)| (k.clone(), document(v))).collect())
        }
    }
}

fn value(doc: &Document) -> Value {
    match doc {
        Document::Null => Value::Null,
        Document::Bool(b) => json!(b),
        Document::Number(Number::PosInt(u)) => json!(u),
        Document::Number(Number::NegInt(i)) => json!(i),
        Document::Number(Number::Float(f)) => json!(f),
        Document::String(s) => json!(s),
        Document::Array(items) => Value::Array(items.iter().map(value).collect()),
        Document::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), value(v))).collect())
        }
    }
}

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

impl Automation {
    pub(super) async fn ai(
        &self,
        rule: &Rule,
        fired: &Fired,
        now: DateTime<Utc>,
    ) -> Result<Applied, WorkError> {
        let Action::Ai { tools, .. } = &rule.action else {
            return Ok(Applied::default());
        };
        let hold = chrono::Duration::seconds(HOLD_SECS);
        let (org, key) = (&rule.org, &fired.event_key);
        let claim = runs::claim(&self.store, org, &rule.rule_id, key, now, hold, None).await?;
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
        let answer = self.answer_of(&run, fired, now).await?;
        let mut applied = Applied::default();
        for (id, name, input) in answer.calls.iter().take(TOOL_CALLS_MAX) {
            if !tools.iter().any(|t| t.name() == name) {
                tracing::warn!(run = %run.name, tool = %name, "the model called a tool it was not given");
                continue;
            }
            applied = applied.and(
                self.act(rule, fired, &run.name, id, name, input, now)
                    .await?,
            );
        }
        run.settle(&self.store, RunState::Done, now).await?;
        tracing::info!(run = %run.name, calls = answer.calls.len(), tokens = %answer.tokens, "ai run done");
        Ok(applied)
    }

    /// The run's answer: the one stored on it (a retry never asks again), or the model's now,
    /// stored before anything acts on it while this attempt holds the run. A model that cannot
    /// answer now gives the run back (`not_sent`); one that refuses fails it with the reason.
    async fn answer_of(
        &self,
        run: &Run<'_>,
        fired: &Fired,
        now: DateTime<Utc>,
    ) -> Result<Answer, WorkError> {
        let Action::Ai {
            model,
            instructions,
            tools,
        } = &run.rule.action
        else {
            return Err(WorkError::transient(Transient("not an ai run".into())));
        };
        let stored = self.store.get(&run.pk()).await?;
        if let Some(raw) = stored.as_ref().and_then(|i| i.opt_str("answer")) {
            return Ok(Answer::from_json(
                &serde_json::from_str(raw).unwrap_or(Value::Null),
            ));
        }
        let answer = match self.ask(model, instructions, tools, fired).await {
            Ok(answer) => answer,
            Err(Asked::Retry(why)) => {
                run.settle(&self.store, RunState::NotSent, now).await?;
                return Err(WorkError::transient(Transient(why)));
            }
            Err(Asked::Refused(why)) => {
                run.keep(&self.store, Update::new().set("reason", s(&why)))
                    .await?;
                run.settle(&self.store, RunState::Failed, now).await?;
                return Err(WorkError::Permanent {
                    reason: Reason::ModelRefused,
                    detail: format!("the model {model} refused: {why}"),
                });
            }
        };
        let kept = Update::new()
            .set("answer", s(answer.to_json().to_string()))
            .set("tokens", s(answer.tokens.to_string()));
        if !run.keep(&self.store, kept).await? {
            return Err(WorkError::transient(Transient(
                "the ai run's lease ran out before its answer was kept".into(),
            )));
        }
        Ok(answer)
    }

    /// One tool call, once: its effect keyed by (run, call).
    #[allow(clippy::too_many_arguments)]
    async fn act(
        &self,
        rule: &Rule,
        fired: &Fired,
        run: &str,
        call_id: &str,
        name: &str,
        input: &Value,
        now: DateTime<Utc>,
    ) -> Result<Applied, WorkError> {
        let key = call_key(run, call_id);
        let event_key = EventKey::new("ai", &format!("{}:{key}", fired.event_key));
        let text = |field: &str| input[field].as_str().unwrap_or_default().to_owned();
        match name {
            "reply" => {
                // Into the trigger's own conversation, whatever the model named.
                let reply = Fired {
                    event_key,
                    ..fired.clone()
                };
                self.reply(rule, &text("text"), &reply, now).await
            }
            "create_task" => {
                let created =
                    automation::create_task(&self.store, rule, &text("title"), &event_key, now)
                        .await?;
                Ok(Applied::one(created))
            }
            _ => self.pay(rule, &key, input, now).await,
        }
    }

    /// A `register_payment` tool call: the one payment function, source `assistant`, its
    /// external id derived from (run, call).
    async fn pay(
        &self,
        rule: &Rule,
        key: &str,
        input: &Value,
        now: DateTime<Utc>,
    ) -> Result<Applied, WorkError> {
        let Ok(external_id) = ExternalId::parse("ai", &format!("ai-{key}")) else {
            return Ok(Applied::default());
        };
        let payment = PaymentInput {
            org: rule.org.clone(),
            invoice_ref: input["invoice_id"].as_str().map(str::to_owned),
            source: Source::Assistant,
            external_id,
            amount: input["amount"]
                .as_str()
                .and_then(|a| firmspace::money::parse_amount(a).ok()),
            currency: None,
            at: now,
            actor: format!("ai:{}", rule.rule_id),
            reverses: None,
            reversible: false,
            via: None,
        };
        let booked =
            register_payment(&self.store, &payment)
                .await
                .map_err(|e| match e.is_retryable() {
                    true => WorkError::transient(Transient(e.to_string())),
                    false => WorkError::Permanent {
                        reason: Reason::StoreRefused,
                        detail: e.to_string(),
                    },
                })?;
        Ok(Applied::one(booked.is_new()))
    }

    /// The model's answer for the event: Converse with the instructions, the event and its
    /// conversation, and the tools the rule gives it.
    async fn ask(
        &self,
        model: &str,
        instructions: &str,
        tools: &[AiTool],
        fired: &Fired,
    ) -> Result<Answer, Asked> {
        let client = self
            .model
            .as_ref()
            .ok_or_else(|| Asked::Refused("no model client is configured".into()))?;
        let input = self
            .input(fired)
            .await
            .map_err(|e| Asked::Retry(e.to_string()))?;
        let message = Message::builder()
            .role(ConversationRole::User)
            .content(ContentBlock::Text(input))
            .build()
            .map_err(|e| Asked::Refused(e.to_string()))?;
        let mut call = client
            .converse()
            .model_id(model)
            .system(SystemContentBlock::Text(instructions.to_owned()))
            .messages(message);
        if !tools.is_empty() {
            call = call.tool_config(tool_config(tools)?);
        }
        let out = call.send().await.map_err(asked)?;
        Ok(Answer::of(&out))
    }
}

/// The rule's tools as Converse takes them, with the schemas the assistant's tools have.
fn tool_config(tools: &[AiTool]) -> Result<ToolConfiguration, Asked> {
    let refused = |e: aws_sdk_bedrockruntime::error::BuildError| Asked::Refused(e.to_string());
    let mut config = ToolConfiguration::builder();
    for tool in tools {
        let spec = firmspace::effects::tools::find(tool.name()).expect("every ai tool is a tool");
        let built = ToolSpecification::builder()
            .name(spec.name)
            .description(spec.description)
            .input_schema(ToolInputSchema::Json(document(&(spec.input_schema)())))
            .build()
            .map_err(refused)?;
        config = config.tools(Tool::ToolSpec(built));
    }
    config.build().map_err(refused)
}

/// A failed Converse call: one a retry may get past (throttled, unavailable, timed out, not
/// reached), or a refusal.
fn asked(
    e: aws_sdk_bedrockruntime::error::SdkError<
        aws_sdk_bedrockruntime::operation::converse::ConverseError,
    >,
) -> Asked {
    use aws_sdk_bedrockruntime::operation::converse::ConverseError as E;
    let why = aws_sdk_bedrockruntime::error::DisplayErrorContext(&e).to_string();
    match e.as_service_error() {
        Some(E::ThrottlingException(_))
        | Some(E::ServiceUnavailableException(_))
        | Some(E::InternalServerException(_))
        | Some(E::ModelNotReadyException(_))
        | Some(E::ModelTimeoutException(_)) => Asked::Retry(why),
        Some(_) => Asked::Refused(why),
        None => Asked::Retry(why),
    }
}

impl Answer {
    /// What Converse answered: its text, its tool calls and the tokens it used.
    fn of(out: &aws_sdk_bedrockruntime::operation::converse::ConverseOutput) -> Self {
        let mut answer = Answer {
            text: String::new(),
            calls: Vec::new(),
            tokens: out
                .usage()
                .map(|u| json!({"input": u.input_tokens(), "output": u.output_tokens(), "total": u.total_tokens()}))
                .unwrap_or(Value::Null),
        };
        if let Some(aws_sdk_bedrockruntime::types::ConverseOutput::Message(message)) = out.output()
        {
            for block in message.content() {
                match block {
                    ContentBlock::Text(text) => answer.text.push_str(text),
                    ContentBlock::ToolUse(call) => answer.calls.push((
                        call.tool_use_id().to_owned(),
                        call.name().to_owned(),
                        value(call.input()),
                    )),
                    _ => {}
                }
            }
        }
        answer
    }
}

impl Automation {
    /// The event and at most the latest 20 messages of its conversation, in at most 16 KB.
    async fn input(&self, fired: &Fired) -> Result<String, firmspace::store::StoreError> {
        let conversation = fired.context.get("conversation_id").and_then(Value::as_str);
        let mut messages: Vec<Value> = match conversation {
            Some(id) => firmspace::messages::messages(&self.store, &fired.org, id)
                .await?
                .iter()
                .rev()
                .take(MESSAGES_MAX)
                .rev()
                .map(|m| json!({"direction": m.direction, "text": m.text, "at": firmspace::time::format(m.at)}))
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

/// Why the model gave no answer: a failure a retry may get past, or a refusal.
pub(crate) enum Asked {
    Retry(String),
    Refused(String),
}
