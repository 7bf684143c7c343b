//! Automation rules and their runs. A run is keyed (rule id, triggering event key) and happens
//! once: a task's id is derived from the run; an outgoing message's run moves through the states
//! in `runs`.

use super::runs::RunState;
use super::Trigger;
use crate::ids::{EventKey, IntegrationId, LocalId, OrgId};
use crate::store::item::{tag_name, Builder, Read};
use crate::store::{Step, Store, StoreError, Transacted};
use crate::time;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Action {
    CreateTask {
        title: String,
    },
    SendMessage {
        integration_id: IntegrationId,
        text: String,
    },
    /// Sends `text` back into the conversation the trigger came from (`message.received`), or
    /// the contact's latest Telegram or WhatsApp conversation (`call.missed`).
    Reply {
        text: String,
    },
    /// Asks `model` (Amazon Bedrock's Converse) what to do about the event, with `instructions`
    /// and these of the product's tools; each tool call it makes is one effect of the run.
    Ai {
        model: String,
        instructions: String,
        tools: Vec<AiTool>,
    },
}

/// The tools an AI step may be given: the assistant's own (`effects::tools`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AiTool {
    Reply,
    CreateTask,
    RegisterPayment,
}

impl AiTool {
    pub fn name(self) -> &'static str {
        match self {
            Self::Reply => "reply",
            Self::CreateTask => "create_task",
            Self::RegisterPayment => "register_payment",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    pub org: OrgId,
    pub rule_id: String,
    pub trigger: Trigger,
    pub action: Action,
}

fn rules_list(org: &OrgId, trigger: Trigger) -> String {
    org.pk(&format!("RULES#{}", tag_name(&trigger)))
}

pub async fn create_rule(
    store: &Store,
    org: &OrgId,
    trigger: Trigger,
    action: Action,
    now: DateTime<Utc>,
) -> Result<Rule, StoreError> {
    let rule_id = LocalId::generate("rule_").as_str().to_owned();
    let item = Builder::new(&org.pk(&format!("RULE#{rule_id}")), "rule", org.as_str())
        .str("rule_id", &rule_id)
        .tag("trigger", &trigger)
        .str(
            "action",
            serde_json::to_string(&action).expect("actions serialize"),
        )
        .time("created_at", now)
        .list(
            &rules_list(org, trigger),
            &format!("{}#{rule_id}", time::format(now)),
        )
        .build();
    store.put_new(item).await?;
    Ok(Rule {
        org: org.clone(),
        rule_id,
        trigger,
        action,
    })
}

/// The organisation's rules for a trigger, oldest first.
pub async fn rules_for(
    store: &Store,
    org: &OrgId,
    trigger: Trigger,
) -> Result<Vec<Rule>, StoreError> {
    store
        .list(&rules_list(org, trigger), false, 100)
        .await?
        .iter()
        .map(|item| {
            let action = serde_json::from_str(item.str_of("action")?).map_err(|e| {
                StoreError::Malformed {
                    pk: item.opt_str("pk").unwrap_or_default().to_owned(),
                    detail: e.to_string(),
                }
            })?;
            Ok(Rule {
                org: org.clone(),
                rule_id: item.str_of("rule_id")?.to_owned(),
                trigger,
                action,
            })
        })
        .collect()
}

/// Where the automation worker marks a fired trigger handled: every rule for it ran (or was
/// parked for a person). What the operator reads to tell a trigger that waits from one done.
pub fn handled_pk(fired: &super::Fired) -> String {
    fired.org.pk(&format!(
        "FIRED#{}#{}",
        tag_name(&fired.trigger),
        crate::ids::key_part(fired.event_key.as_str())
    ))
}

/// Marks a fired trigger handled, once.
pub async fn mark_handled(
    store: &Store,
    fired: &super::Fired,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let item = Builder::new(&handled_pk(fired), "fired", fired.org.as_str())
        .tag("trigger", &fired.trigger)
        .str("event_key", fired.event_key.as_str())
        .time("at", now)
        .build();
    store.put_new(item).await.map(|_| ())
}

/// The run's identity: `{rule_id}:{event_key}`.
pub fn run_key(rule_id: &str, event_key: &EventKey) -> String {
    format!("{rule_id}:{event_key}")
}

fn digest(org: &OrgId, run_key: &str) -> String {
    hex::encode(Sha256::digest(format!("{org}|{run_key}")))
}

/// The `Idempotency-Key` an outgoing call of this run carries, the same on every attempt.
pub fn idempotency_key(org: &OrgId, run_key: &str) -> String {
    format!("fs_run_{}", &digest(org, run_key)[..32])
}

/// A task's id is derived from its run, so a second run cannot make a second task.
pub fn task_id(org: &OrgId, run_key: &str) -> String {
    format!("task_{}", &digest(org, run_key)[..16])
}

/// Runs a `create_task` rule: the run and its task in one transaction. `Ok(false)` on a rerun.
pub async fn create_task(
    store: &Store,
    rule: &Rule,
    title: &str,
    event_key: &EventKey,
    now: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let key = run_key(&rule.rule_id, event_key);
    let id = task_id(&rule.org, &key);
    let task = Builder::new(
        &rule.org.pk(&format!("TASK#{id}")),
        "task",
        rule.org.as_str(),
    )
    .str("id", &id)
    .str("rule_id", &rule.rule_id)
    .str("event_key", event_key.as_str())
    .str("title", title)
    .time("at", now)
    .list(
        &rule.org.pk("TASKS"),
        &format!("{}#{id}", time::format(now)),
    )
    .build();
    let run = super::runs::run_item(&rule.org, &rule.rule_id, event_key, RunState::Done, now);
    match store
        .transact(vec![Step::PutNew(run), Step::PutNew(task)])
        .await?
    {
        Transacted::Done => Ok(true),
        Transacted::Refused { .. } => Ok(false),
        Transacted::Contended => Err(StoreError::Contended {
            pk: super::runs::run_pk(&rule.org, &key),
        }),
    }
}

pub async fn tasks(store: &Store, org: &OrgId) -> Result<Vec<Value>, StoreError> {
    let items = store.list(&org.pk("TASKS"), false, 500).await?;
    Ok(items
        .iter()
        .map(|i| {
            json!({
                "id": i.opt_str("id"),
                "rule_id": i.opt_str("rule_id"),
                "event_key": i.opt_str("event_key"),
                "title": i.opt_str("title"),
                "at": i.opt_str("at"),
            })
        })
        .collect())
}
