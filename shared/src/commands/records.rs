//! The commands that make and change an organisation's own records: rules, keys, members,
//! contacts, a softphone's call, a top-up of the prepaid wallet, a notification read.

use super::answers::MarkedRead;
use super::{Actor, Env};
use crate::commands::model::{Models, MAX_TOKENS_MAX};
use crate::commands::{Command, Once, Ran, Replies, RequestKey};
use crate::commands::{Made, Refused};
use crate::effects::automation::{self, Action};
use crate::effects::{notify, Trigger};
use crate::fields::{self, FieldError, KEY_MAX, TEXT_MAX, TITLE_MAX};
use crate::integrations::{self, IntegrationKind};
use crate::orgs::keys::{self, Scope, Scopes};
use crate::store::item::parse_tag;
use crate::store::{CapError, Store};
use secrecy::ExposeSecret;
use serde_json::{json, Value};

/// Every field of a rule's action within its limit, and fit for its trigger.
async fn check_action(
    store: &Store,
    by: &Actor,
    (trigger, action): (Trigger, &Action),
    models: &Models,
) -> Result<(), Refused> {
    match action {
        Action::CreateTask { title } => fields::line("title", title, TITLE_MAX).map(drop)?,
        Action::SendMessage { text, .. } | Action::Reply { text } => {
            fields::text("text", text, TEXT_MAX).map(drop)?
        }
        Action::Ai { .. } => check_ai(trigger, action, models)?,
    }
    if matches!(action, Action::Reply { .. }) && !trigger.answers_a_conversation() {
        return Err(Refused::invalid(
            "invalid_action",
            "reply answers a conversation: its trigger is message.received or call.missed",
        ));
    }
    if let Action::SendMessage { integration_id, .. } = action {
        // Only its kind: the api function may seal secrets but never open them.
        let kind = match integration_id.org == *by.org() {
            true => integrations::kind(store, integration_id).await?,
            false => None,
        };
        if kind != Some(IntegrationKind::Outbound) {
            return Err(Refused::invalid(
                "invalid_integration",
                "send_message needs an outbound integration of this organisation",
            ));
        }
    }
    Ok(())
}

/// An AI step's model on the allow-list, its bound and instructions within their limits, and
/// only tools a model may be given, each once (`reply` only for a conversation's triggers).
fn check_ai(trigger: Trigger, action: &Action, models: &Models) -> Result<(), Refused> {
    let Action::Ai {
        model,
        instructions,
        tools,
        max_tokens,
    } = action
    else {
        return Ok(());
    };
    let invalid = |detail: String| Err(Refused::invalid("invalid_action", detail));
    if !models.allows(model) {
        let detail = format!("model is one of {}", models.list().join(", "));
        return Err(Refused::invalid("model_not_allowed", detail));
    }
    if max_tokens.is_some_and(|m| !(1..=MAX_TOKENS_MAX).contains(&m)) {
        return invalid(format!("max_tokens is 1 to {MAX_TOKENS_MAX}"));
    }
    if let Some(tool) = tools.iter().find(|t| !super::tools::for_model(**t)) {
        return invalid(format!("an ai step may not be given {}", tool.name()));
    }
    fields::text("instructions", instructions, TEXT_MAX)?;
    let unique: std::collections::HashSet<_> = tools.iter().collect();
    if unique.len() != tools.len() {
        return invalid("an ai action names each tool at most once".into());
    }
    let replies = tools.contains(&crate::effects::automation::Tool::Reply);
    if replies && !trigger.answers_a_conversation() {
        return invalid(
            "the reply tool answers a conversation: its trigger is message.received or call.missed"
                .into(),
        );
    }
    Ok(())
}

/// Refused `code` (409, with `detail`) when a count is at its cap (a put held to no marker is
/// never `Taken`).
fn at_cap(code: &'static str, detail: String) -> impl FnOnce(CapError) -> Refused {
    move |e| match e {
        CapError::Store(e) => e.into(),
        CapError::Full | CapError::Taken => Refused::conflict(code, detail),
    }
}

/// An automation rule: on a trigger, a task, a message, a reply or an AI step.
#[derive(Debug)]
pub struct CreateRule {
    pub trigger: String,
    pub action: Value,
}

/// A rule: `trigger` and `action` read, the action checked for its trigger, recorded with who
/// made it.
impl Command for CreateRule {
    type Answer = automation::RuleView;
    const NAME: &'static str = "create_rule";
    const REQUIRES: &'static [Scope] = &[Scope::Write];
    const ONCE: Once = Once::Each;

    async fn run<R: Replies>(
        self,
        env: &Env<'_, R>,
        by: &Actor,
        _key: &RequestKey,
    ) -> Ran<automation::RuleView> {
        let (trigger, action) = (self.trigger.as_str(), self.action);
        let trigger = parse_tag::<Trigger>(trigger).ok_or_else(|| {
            let names: Vec<String> = Trigger::ALL
                .iter()
                .map(crate::store::item::tag_name)
                .collect();
            Refused::invalid(
                "invalid_trigger",
                format!("trigger must be one of {}", names.join(", ")),
            )
        })?;
        let action: Action = serde_json::from_value(action).map_err(|e| {
            Refused::invalid(
                "invalid_action",
                format!(
                    "action must be create_task {{title}}, send_message {{integration_id, text}}, reply {{text}} or ai {{model, instructions, tools}}: {}",
                    crate::fields::plain(&e.to_string())
                ),
            )
        })?;
        let models = env
            .site
            .map(|s| &s.models)
            .ok_or_else(|| Refused::not_found("route"))?;
        check_action(env.store, by, (trigger, &action), models).await?;
        let who = by.id();
        let (rule, item) = automation::new_rule(by.org(), (trigger, action), Some(&who), env.now);
        let answer = automation::RuleView {
            rule_id: rule.rule_id,
            trigger: rule.trigger,
            action: rule.action,
            created_at: Some(crate::time::format(env.now)),
            created_by: Some(who),
        };
        let put = automation::under_cap(env.store, by.org(), trigger, item).await?;
        let detail = format!("a trigger holds at most {} rules", automation::RULES_MAX);
        env.apply(put, at_cap("too_many_rules", detail)).await?;
        Ok((Made::Created, answer))
    }
}

/// Another API key, granting at most the asking key's scopes.
#[derive(Debug)]
pub struct CreateKey {
    pub name: String,
    pub scopes: Vec<String>,
}

/// Another key of the organisation, granting at most the scopes of the key that asks.
impl Command for CreateKey {
    type Answer = super::answers::KeyCreated;
    const NAME: &'static str = "create_key";
    const REQUIRES: &'static [Scope] = &[Scope::Ops];
    const ONCE: Once = Once::Each;

    async fn run<R: Replies>(
        self,
        env: &Env<'_, R>,
        by: &Actor,
        _key: &RequestKey,
    ) -> Ran<super::answers::KeyCreated> {
        let (name, scopes) = (self.name.as_str(), self.scopes.as_slice());
        let name = fields::name("name", name, keys::NAME_MAX)?;
        let parsed = scopes
            .iter()
            .map(|s| Scope::parse(s))
            .collect::<Option<Vec<_>>>()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                Refused::invalid(
                    "invalid_scopes",
                    "scopes is a non-empty list of read, write and ops",
                )
            })?;
        let scopes = Scopes::of(&parsed);
        let covered = match by {
            Actor::Key(key) | Actor::Assistant(key) => key.scopes.covers(scopes),
            Actor::Admin { .. } => true,
            Actor::Model { .. } => false,
        };
        if !covered {
            let detail = "a key grants only scopes the key that makes it has";
            return Err(Refused::forbidden(detail));
        }
        let made = keys::another(env.store, by.org(), (name, scopes), &by.id(), env.now).await?;
        let (info, api_key, put) = made;
        let detail = format!("an organisation holds at most {} keys", keys::KEYS_MAX);
        env.apply(put, at_cap("too_many_keys", detail)).await?;
        Ok((
            Made::Created,
            super::answers::KeyCreated {
                key_id: info.key_id,
                api_key: api_key.expose_secret().to_owned(),
                scopes: info.scopes,
                name: info.name,
                created_at: info.created_at,
            },
        ))
    }
}

/// An API key revoked.
#[derive(Debug)]
pub struct RevokeKey {
    pub key_id: String,
}

impl Command for RevokeKey {
    type Answer = keys::KeyInfo;
    const NAME: &'static str = "revoke_key";
    const REQUIRES: &'static [Scope] = &[Scope::Ops];
    const ONCE: Once = Once::ByState;

    async fn run<R: Replies>(
        self,
        env: &Env<'_, R>,
        by: &Actor,
        _key: &RequestKey,
    ) -> Ran<keys::KeyInfo> {
        let key_id = self.key_id.as_str();
        let revoking = keys::revoking(env.store, by.org(), key_id, &by.id())
            .await?
            .ok_or_else(|| Refused::not_found("key"))?;
        let revoked = env.apply(revoking, Refused::from).await?;
        let info = revoked
            .into_value()
            .ok_or_else(|| Refused::not_found("key"))?;
        Ok((Made::Done, info))
    }
}

/// A member of the organisation's team.
#[derive(Debug)]
pub struct AddMember {
    pub user_id: String,
    pub name: String,
}

/// A member of the team, once per `user_id`.
impl Command for AddMember {
    type Answer = super::answers::MemberAdded;
    const NAME: &'static str = "add_member";
    const REQUIRES: &'static [Scope] = &[Scope::Write];
    const ONCE: Once = Once::ByState;

    async fn run<R: Replies>(
        self,
        env: &Env<'_, R>,
        by: &Actor,
        _key: &RequestKey,
    ) -> Ran<super::answers::MemberAdded> {
        let (user_id, name) = (self.user_id.as_str(), self.name.as_str());
        crate::ids::LocalId::parse("user_id", user_id)
            .map_err(|e| Refused::invalid("invalid_user_id", e.to_string()))?;
        let member = crate::orgs::Member {
            user_id: user_id.to_owned(),
            name: fields::name("name", name, fields::NAME_MAX)?.to_owned(),
        };
        let max = env
            .site
            .map_or(crate::orgs::MEMBERS_MAX, |site| site.members_max);
        let detail = format!("an organisation holds at most {max} members");
        let adding = crate::orgs::adding(by.org(), &member, max, env.now);
        let added = env.apply(adding, at_cap("limit_reached", detail)).await?;
        // A member added before keeps the name it was added with: that is what is answered.
        let status = if added.is_new() {
            Made::Created
        } else {
            Made::Done
        };
        let stored = crate::orgs::stored_member(added.value());
        let answer = super::answers::MemberAdded {
            user_id: member.user_id,
            name: stored.name,
            duplicate: status == Made::Done,
        };
        Ok((status, answer))
    }
}

/// A notification marked read.
#[derive(Debug)]
pub struct MarkRead {
    pub key: String,
}

/// A notification marked read.
impl Command for MarkRead {
    type Answer = MarkedRead;
    const NAME: &'static str = "mark_read";
    const REQUIRES: &'static [Scope] = &[Scope::Write];
    const ONCE: Once = Once::ByState;

    async fn run<R: Replies>(
        self,
        env: &Env<'_, R>,
        by: &Actor,
        _key: &RequestKey,
    ) -> Ran<MarkedRead> {
        let key = self.key.as_str();
        // A notification key is an encoded event key (a `%` of the key becomes `%25`), or that and
        // `#` and an encoded member id: bounded in bytes, as the partition key it names is.
        const MAX: usize = 4 * KEY_MAX;
        fields::line("key", key, MAX)?;
        if key.len() > MAX {
            let reason = format!("must be at most {MAX} bytes");
            return Err(FieldError {
                field: "key",
                reason,
            }
            .into());
        }
        let marked = env.apply(notify::marking(by.org(), key), Refused::from);
        match marked.await?.into_value() {
            true => Ok((
                Made::Done,
                MarkedRead {
                    key: key.to_owned(),
                    read: true,
                },
            )),
            false => Err(Refused::not_found("notification")),
        }
    }
}

/// The softphone's report of a call.
#[derive(Debug)]
pub struct RecordCall(pub Box<crate::calls::CallFields>);

/// The softphone's report of a call, stored once under `call:CALL_ID:DIRECTION`: 201 the
/// first time, 200 with `duplicate: true` and the stored call after.
impl Command for RecordCall {
    type Answer = super::answers::CallRecorded;
    const NAME: &'static str = "record_call";
    const REQUIRES: &'static [Scope] = &[Scope::Write];
    const ONCE: Once = Once::ByState;

    async fn run<R: Replies>(
        self,
        env: &Env<'_, R>,
        by: &Actor,
        _key: &RequestKey,
    ) -> Ran<super::answers::CallRecorded> {
        let call = &*self.0;
        use crate::calls::{self, Checked};
        use crate::delivery::{tell, Recorded};
        let input = match call.check(by.org(), "softphone", env.now)? {
            Checked::Call(input) => input,
            Checked::Pending(status) => {
                let ignored = super::answers::CallIgnored {
                    status: crate::delivery::Ignored::Ignored,
                    call_status: status,
                };
                return Ok((Made::Done, super::answers::CallRecorded::Ignored(ignored)));
            }
        };
        let written = env.apply(calls::recording(&input), Refused::from).await?;
        let status = if written.is_new() {
            Made::Created
        } else {
            Made::Done
        };
        let recorded = Recorded::one(input.key(), written);
        let kind = crate::review::Kind::Call;
        let told = tell(env.store, by.org(), kind, &recorded, json!({}), env.now).await?;
        let call = super::answers::EventAnswer::from_json(told.answer);
        Ok((status, super::answers::CallRecorded::Call(call)))
    }
}

/// A contact made by hand.
#[derive(Debug)]
pub struct CreateContact {
    pub name: String,
    pub phone: Option<String>,
    pub owner: Option<String>,
}

/// A contact made by hand; a phone that already belongs to a contact is a 409 naming it.
impl Command for CreateContact {
    type Answer = crate::contacts::ContactView;
    const NAME: &'static str = "create_contact";
    const REQUIRES: &'static [Scope] = &[Scope::Write];
    const ONCE: Once = Once::Each;

    async fn run<R: Replies>(
        self,
        env: &Env<'_, R>,
        by: &Actor,
        _key: &RequestKey,
    ) -> Ran<crate::contacts::ContactView> {
        let (name, phone, owner) = (
            self.name.as_str(),
            self.phone.as_deref(),
            self.owner.as_deref(),
        );
        use crate::contacts::{self, CreateError, NewContact};
        let new = NewContact::manual(name, phone, owner)?;
        // The owner is told about this contact's missed calls: it must be someone who reads them.
        if let Some(owner) = &new.owner {
            if !crate::orgs::is_member(env.store, by.org(), owner).await? {
                let reason =
                    "is not a member of this organisation (POST /api/members first)".into();
                return Err(FieldError {
                    field: "owner",
                    reason,
                }
                .into());
            }
        }
        let refused = |e: CreateError| match e {
            CreateError::Store(e) => e.into(),
            taken @ CreateError::PhoneTaken(_) => {
                Refused::conflict("phone_in_use", taken.to_string())
            }
        };
        let created = env.apply(contacts::creating(by.org(), new, env.now), refused);
        Ok((Made::Created, created.await?.value().view()))
    }
}
