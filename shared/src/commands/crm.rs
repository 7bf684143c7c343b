//! The commands that change the CRM's records: a reply, a task, a deal's stage, a ledger
//! line given back.

use super::{Actor, Env, Replies, RequestKey};
use crate::commands::{Made, Refused};
use crate::effects::automation::{self, Action, Rule};
use crate::effects::{AssistedReply, Trigger};
use crate::fields::{self, TEXT_MAX, TITLE_MAX};
use crate::ids::{EventKey, LocalId};
use serde_json::{json, Value};

/// The run a command's effect is keyed by: the model's rule and its trigger's tool call, or
/// the assistant's (every assistant call is a run of the one `assistant` rule).
fn run_of(by: &Actor, key: &RequestKey) -> (String, EventKey) {
    match by {
        Actor::Model {
            rule_id, event_key, ..
        } => (
            rule_id.clone(),
            EventKey::new("ai", &format!("{event_key}:{}", key.id())),
        ),
        _ => (
            AssistedReply::RULE.into(),
            EventKey::new("assistant", key.id()),
        ),
    }
}

pub(super) async fn reply<R: Replies>(
    env: &Env<'_, R>,
    by: &Actor,
    key: &RequestKey,
    conversation_id: &str,
    text: &str,
) -> Result<(Made, Value), Refused> {
    let text = fields::text("text", text, TEXT_MAX)?;
    // A model's reply goes into its trigger's own conversation, whatever it named: the
    // worker that runs it finds that one.
    if !matches!(by, Actor::Model { .. }) {
        channel_replies(env, by, conversation_id).await?;
    }
    let (rule, event_key) = run_of(by, key);
    let asked = AssistedReply {
        org: by.org().clone(),
        call_id: key.id().to_owned(),
        conversation_id: conversation_id.to_owned(),
        text: text.to_owned(),
        at: env.now,
    };
    let mut answer = env.replies.reply(asked).await?;
    answer["conversation_id"] = json!(conversation_id);
    answer["run"] = json!(automation::run_key(&rule, &event_key));
    Ok((Made::Done, answer))
}

/// 404 for an unknown conversation, 409 for one whose channel takes no replies from us.
async fn channel_replies<R>(env: &Env<'_, R>, by: &Actor, id: &str) -> Result<(), Refused> {
    let conversation = crate::messages::conversation(env.store, by.org(), id)
        .await?
        .ok_or_else(|| Refused::not_found("conversation"))?;
    if !conversation.provider.can_reply() {
        return Err(Refused::conflict(
            "reply_unsupported",
            "this conversation's channel takes no replies from us",
        ));
    }
    Ok(())
}

pub(super) async fn task<R>(
    env: &Env<'_, R>,
    by: &Actor,
    key: &RequestKey,
    title: &str,
) -> Result<(Made, Value), Refused> {
    let title = fields::line("title", title, TITLE_MAX)?;
    let (rule_id, event_key) = run_of(by, key);
    let rule = Rule {
        org: by.org().clone(),
        rule_id,
        trigger: Trigger::MessageReceived,
        action: Action::CreateTask {
            title: title.to_owned(),
        },
    };
    let created = automation::create_task(env.store, &rule, title, &event_key, env.now).await?;
    let run = automation::run_key(&rule.rule_id, &event_key);
    Ok((
        Made::Done,
        json!({"task_id": automation::task_id(&rule.org, &run), "created": created}),
    ))
}

/// Moves a card; a card on that stage already is answered with `moved: false`.
pub(super) async fn move_deal<R>(
    env: &Env<'_, R>,
    by: &Actor,
    id: &str,
    to: crate::deals::Stage,
) -> Result<(Made, Value), Refused> {
    use crate::deals::{self, Moved};
    LocalId::parse("deal_id", id).map_err(|_| Refused::not_found("deal"))?;
    let moved = deals::move_to(env.store, by.org(), id, to, env.now).await?;
    let (deal, moved, from) = match moved.ok_or_else(|| Refused::not_found("deal"))? {
        Moved::Moved { deal, from } => (deal, true, Some(from)),
        Moved::Already(deal) => (deal, false, None),
    };
    let answer = crate::deals::DealView {
        moved: Some(moved),
        from: Some(from),
        ..deal.view()
    };
    Ok((Made::Done, json!(answer)))
}

/// Gives a debit line of the prepaid ledger back once, keyed by the line.
pub(super) async fn refund_line<R>(
    env: &Env<'_, R>,
    by: &Actor,
    ledger_id: &str,
    reason: &str,
) -> Result<(Made, Value), Refused> {
    use crate::ledger::correction::{self, RefundError};
    let reason = fields::line("reason", reason, 500)?;
    fields::reference("ledger_id", ledger_id, fields::REF_MAX)
        .map_err(|_| Refused::not_found("ledger line"))?;
    let written = correction::refund(env.store, by.org(), ledger_id, reason, &by.id(), env.now)
        .await
        .map_err(|e| match e {
            RefundError::Store(e) => e.into(),
            RefundError::NotFound => Refused::not_found("ledger line"),
            RefundError::NotADebit(_) => Refused::conflict("not_a_debit", e.to_string()),
        })?;
    Ok((Made::Done, written.answer()))
}
