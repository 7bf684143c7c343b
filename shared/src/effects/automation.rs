//! Automation rules and their runs. A run is keyed (rule id, triggering event key) and happens
//! once: a task's id is derived from the run; an outgoing message's run moves through the states
//! in `runs`.

/// A run's identity, where it is made (`runs`), named here too for the callers of automation.
pub use super::runs::run_key;
use super::runs::RunState;
use super::Trigger;
use crate::ids::{EventKey, IntegrationId, LocalId, OrgId};
use crate::store::item::{tag_name, Builder, Read};
use crate::store::{Decision, Item, Plan, Seen, Step, Store, StoreError, Written};
use crate::time;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::{Digest, Sha256};

/// What a rule does when its trigger fires.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Action {
    CreateTask {
        /// 1 to 500 characters, on one line.
        #[schema(min_length = 1, max_length = 500)]
        title: String,
    },
    /// To an outbound integration of this organisation.
    SendMessage {
        #[schema(value_type = String)]
        integration_id: IntegrationId,
        /// 1 to 4000 characters.
        #[schema(min_length = 1, max_length = 4000)]
        text: String,
    },
    /// Sends `text` back into the conversation the trigger came from (`message.received`), or
    /// the contact's latest Telegram or WhatsApp conversation (`call.missed`).
    Reply {
        /// 1 to 4000 characters.
        #[schema(min_length = 1, max_length = 4000)]
        text: String,
    },
    /// Asks `model` (Amazon Bedrock's Converse) what to do about the event, with `instructions`
    /// and these of the product's tools; each tool call it makes is one effect of the run.
    Ai {
        #[schema(example = "anthropic.claude-3-5-haiku-20241022-v1:0")]
        model: String,
        /// 1 to 4000 characters.
        #[schema(min_length = 1, max_length = 4000)]
        instructions: String,
        tools: Vec<Tool>,
        /// The bound on the answer's tokens (default 1024, at most 4096).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schema(minimum = 1, maximum = 4096)]
        max_tokens: Option<u32>,
    },
}

/// Declares `Tool` and its list `Tool::ALL` from one list of its variants.
macro_rules! tools {
    ($($tool:ident),* $(,)?) => {
        /// The product's write actions as tools a model or an assistant calls. A tool's name is its
        /// variant's serde name, written nowhere else; its input, schema and authority are
        /// `commands`'. A rule's AI step may be given those `for_model` allows.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
        #[serde(rename_all = "snake_case")]
        pub enum Tool {
            $($tool),*
        }

        impl Tool {
            /// Every tool, in the order they are listed.
            pub const ALL: [Self; [$(stringify!($tool)),*].len()] = [$(Self::$tool),*];
        }
    };
}

tools! {
    Reply,
    CreateTask,
    RegisterPayment,
    CreateCreditNote,
    ResolveReview,
}

impl Tool {
    pub fn name(self) -> String {
        tag_name(&self)
    }

    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == raw)
    }
}

/// An assistant's `reply` call as a run of the one `assistant` rule: the rule and the event it
/// runs for (the call, in the conversation it names).
pub fn assisted_run(call: &super::AssistedReply) -> (Rule, super::Fired) {
    let rule = Rule {
        org: call.org.clone(),
        rule_id: super::AssistedReply::RULE.into(),
        trigger: Trigger::MessageReceived,
        action: Action::Reply {
            text: call.text.clone(),
        },
    };
    let fired = super::Fired {
        org: call.org.clone(),
        trigger: Trigger::MessageReceived,
        event_key: call.event_key(),
        at: call.at,
        context: json!({"conversation_id": call.conversation_id}),
    };
    (rule, fired)
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

/// Rules one trigger of an organisation holds: each is read when the trigger fires.
pub const RULES_MAX: usize = 100;
/// The kind of an organisation's count of one trigger's rules.
const RULE_COUNT: &str = "rule_count";

/// A new rule's `item` put under its trigger's cap, counted in its own transaction; an
/// organisation's trigger from before rules were counted begins at the rules it lists.
pub async fn under_cap(
    store: &Store,
    org: &OrgId,
    trigger: Trigger,
    item: Item,
) -> Result<crate::store::UnderCap, StoreError> {
    let counter = org.pk(&format!("RULE_COUNT#{}", tag_name(&trigger)));
    let counted = (counter.as_str(), RULE_COUNT, org.as_str());
    let listed = async { Ok(rules_for(store, org, trigger).await?.len()) };
    store.begin_count(counted, listed).await?;
    Ok(crate::store::UnderCap::new(item, counted, RULES_MAX as u64))
}

pub async fn create_rule(
    store: &Store,
    org: &OrgId,
    trigger: Trigger,
    action: Action,
    now: DateTime<Utc>,
) -> Result<Rule, StoreError> {
    create_rule_by(store, org, (trigger, action), None, now).await
}

fn rule_pk(org: &OrgId, rule_id: &str) -> String {
    org.pk(&format!("RULE#{rule_id}"))
}

/// `create_rule`, recording who made it (a key's id, or the admin's public name).
pub async fn create_rule_by(
    store: &Store,
    org: &OrgId,
    made: (Trigger, Action),
    by: Option<&str>,
    now: DateTime<Utc>,
) -> Result<Rule, StoreError> {
    let (rule, item) = new_rule(org, made, by, now);
    store.put_new(item).await?;
    Ok(rule)
}

/// A new rule of `org` (a fresh id) and its item, made `by` at `now`: to be put once.
pub fn new_rule(
    org: &OrgId,
    (trigger, action): (Trigger, Action),
    by: Option<&str>,
    now: DateTime<Utc>,
) -> (Rule, Item) {
    let rule_id = LocalId::generate("rule_").as_str().to_owned();
    let item = Builder::new(&rule_pk(org, &rule_id), "rule", org.as_str())
        .opt_str("created_by", by)
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
    let rule = Rule {
        org: org.clone(),
        rule_id,
        trigger,
        action,
    };
    (rule, item)
}

/// A rule as `GET /api/rules` shows it: who made it (the key's id, or the admin's public
/// name) and when (`Rule`).
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Rule)]
pub struct RuleView {
    pub rule_id: String,
    pub trigger: Trigger,
    pub action: Action,
    #[schema(format = DateTime)]
    pub created_at: Option<String>,
    pub created_by: Option<String>,
}

/// The stored rule `item` as the API shows it.
fn rule_view(item: &Item) -> Result<RuleView, StoreError> {
    Ok(RuleView {
        rule_id: item.str_of("rule_id")?.to_owned(),
        trigger: item.tag_of("trigger")?,
        action: action_of(item)?,
        created_at: item.opt_str("created_at").map(str::to_owned),
        created_by: item.opt_str("created_by").map(str::to_owned),
    })
}

/// A stored rule's action: written by `create_rule_by` alone, so unreadable only if damaged.
fn action_of(item: &Item) -> Result<Action, StoreError> {
    serde_json::from_str(item.str_of("action")?).map_err(|e| StoreError::Malformed {
        pk: item.opt_str("pk").unwrap_or_default().to_owned(),
        detail: e.to_string(),
    })
}

/// Every rule of the organisation, by trigger, each oldest first.
pub async fn list_rules(store: &Store, org: &OrgId) -> Result<Vec<RuleView>, StoreError> {
    let mut rules = Vec::new();
    for trigger in Trigger::ALL {
        let items = store.list(&rules_list(org, trigger), false, 100).await?;
        for item in &items {
            rules.push(rule_view(item)?);
        }
    }
    Ok(rules)
}

/// One rule, or `None`.
pub async fn read_rule(
    store: &Store,
    org: &OrgId,
    rule_id: &str,
) -> Result<Option<RuleView>, StoreError> {
    if LocalId::parse("rule_id", rule_id).is_err() {
        return Ok(None);
    }
    store
        .get(&rule_pk(org, rule_id))
        .await?
        .as_ref()
        .map(rule_view)
        .transpose()
}

/// The organisation's rules for a trigger, oldest first.
pub async fn rules_for(
    store: &Store,
    org: &OrgId,
    trigger: Trigger,
) -> Result<Vec<Rule>, StoreError> {
    store
        .list(&rules_list(org, trigger), false, RULES_MAX as i32)
        .await?
        .iter()
        .map(|item| {
            Ok(Rule {
                org: org.clone(),
                rule_id: item.str_of("rule_id")?.to_owned(),
                trigger,
                action: action_of(item)?,
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
    let written = store
        .write(&mut tasking(rule, title, event_key), now)
        .await?;
    Ok(written.is_new())
}

/// A `create_task` run's decision (`create_task`), for a caller that writes it with more (a
/// request's record): its run's key read; a run there already is a rerun, and makes nothing.
pub fn tasking<'a>(
    rule: &'a Rule,
    title: &'a str,
    event_key: &'a EventKey,
) -> impl Decision<Out = String, Error = StoreError> + 'a {
    Tasking {
        rule,
        title,
        event_key,
    }
}

struct Tasking<'a> {
    rule: &'a Rule,
    title: &'a str,
    event_key: &'a EventKey,
}

impl Decision for Tasking<'_> {
    /// The task's id.
    type Out = String;
    type Error = StoreError;

    fn keys(&self) -> Vec<String> {
        let key = run_key(&self.rule.rule_id, self.event_key);
        vec![super::runs::run_pk(&self.rule.org, &key)]
    }

    fn decide(&self, seen: &Seen, now: DateTime<Utc>) -> Result<Plan<String>, StoreError> {
        let (rule, event_key) = (self.rule, self.event_key);
        let id = task_id(&rule.org, &run_key(&rule.rule_id, event_key));
        if seen.stored().is_some() {
            return Ok(Plan::Done(Written::Repeat { stored: id }));
        }
        let task = Builder::new(
            &rule.org.pk(&format!("TASK#{id}")),
            "task",
            rule.org.as_str(),
        )
        .str("id", &id)
        .str("rule_id", &rule.rule_id)
        .str("event_key", event_key.as_str())
        .str("title", self.title)
        .time("at", now)
        .list(
            &rule.org.pk("TASKS"),
            &format!("{}#{id}", time::format(now)),
        )
        .build();
        let run = super::runs::run_item(&rule.org, &rule.rule_id, event_key, RunState::Done, now);
        Ok(Plan::Write {
            steps: vec![Step::PutNew(run), Step::PutNew(task)],
            out: id,
        })
    }
}

pub async fn tasks(store: &Store, org: &OrgId) -> Result<Vec<TaskView>, StoreError> {
    let items = store.list(&org.pk("TASKS"), false, 500).await?;
    items
        .iter()
        .map(|i| {
            Ok(TaskView {
                id: i.str_of("id")?.to_owned(),
                rule_id: i.str_of("rule_id")?.to_owned(),
                event_key: i.str_of("event_key")?.to_owned(),
                title: i.str_of("title")?.to_owned(),
                at: i.str_of("at")?.to_owned(),
            })
        })
        .collect()
}

/// A task a rule made (`Task`).
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Task)]
pub struct TaskView {
    pub id: String,
    pub rule_id: String,
    pub event_key: String,
    pub title: String,
    #[schema(format = DateTime)]
    pub at: String,
}
