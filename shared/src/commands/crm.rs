//! The commands that change the CRM's records: a reply, a task, a deal's stage, a ledger
//! line given back.

use super::answers::EventAnswer;
use super::{Actor, Env};
use crate::commands::{Command, Ran, Replies, RequestKey};
use crate::commands::{Made, Once, Refused};
use crate::effects::automation::{self, Action, Rule};
use crate::effects::{AssistedReply, Trigger};
use crate::fields::{self, TEXT_MAX, TITLE_MAX};
use crate::ids::{EventKey, LocalId};
use crate::orgs::Scope;
use crate::store::Written;

/// A ledger line given back: the refund line, or the stored one for a repeat.
pub type Refunded = EventAnswer<crate::ledger::correction::RefundAnswer>;

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

/// A text into a Telegram or WhatsApp conversation, sent once by the automation worker.
#[derive(Debug)]
pub struct Reply {
    pub conversation_id: String,
    pub text: String,
}

impl Command for Reply {
    type Answer = super::answers::ReplyQueued;
    const NAME: &'static str = "reply";
    const REQUIRES: &'static [Scope] = &[Scope::Write];
    const FOR_MODEL: bool = true;
    const ONCE: Once = Once::WithEffect;

    async fn run<R: Replies>(
        self,
        env: &Env<'_, R>,
        by: &Actor,
        key: &RequestKey,
    ) -> Ran<super::answers::ReplyQueued> {
        let (conversation_id, text) = (self.conversation_id.as_str(), self.text.as_str());
        let text = fields::text("text", text, TEXT_MAX)?;
        // A model's reply goes into its trigger's own conversation, whatever it named: the
        // worker that runs it finds that one.
        if !matches!(by, Actor::Model { .. }) {
            channel_replies(env, by, conversation_id).await?;
        }
        // A reply is stored under its call's id: a request named by none would share one key.
        if key.id().is_empty() {
            return Err(Refused::invalid(
                "missing_call_id",
                "a reply is asked for by a named call",
            ));
        }
        let (rule, event_key) = run_of(by, key);
        let asked = AssistedReply {
            org: by.org().clone(),
            call_id: key.id().to_owned(),
            conversation_id: conversation_id.to_owned(),
            text: text.to_owned(),
            at: env.now,
        };
        let queued = move |state| super::answers::ReplyQueued {
            state,
            conversation_id: conversation_id.to_owned(),
            run: automation::run_key(&rule, &event_key),
        };
        // A model's reply its AI step sends itself; anyone else's is stored with the call, and
        // the stream queues it for the automation worker.
        if let Actor::Model { .. } = by {
            return Ok((Made::Done, queued(env.replies.reply(asked).await?)));
        }
        let sending = queued(super::answers::ReplyState::Sending);
        let answer = move |_: &Written<()>| (Made::Done, sending.clone());
        let put = crate::store::write::PutOnce(asked.to_item());
        let (_, made, sending) = env.answered(put, answer, Refused::from).await?;
        Ok((made, sending))
    }
}

/// 404 for an unknown conversation, 409 for one whose channel takes no replies from us.
async fn channel_replies<R>(env: &Env<'_, R>, by: &Actor, id: &str) -> Result<(), Refused> {
    // A conversation's id is `cv_` and 20 hex digits: one of another shape names none.
    LocalId::parse("conversation_id", id).map_err(|_| Refused::not_found("conversation"))?;
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

/// A task for the team.
#[derive(Debug)]
pub struct CreateTask {
    pub title: String,
}

impl Command for CreateTask {
    type Answer = super::answers::TaskCreated;
    const NAME: &'static str = "create_task";
    const REQUIRES: &'static [Scope] = &[Scope::Write];
    const FOR_MODEL: bool = true;
    const ONCE: Once = Once::WithEffect;

    async fn run<R: Replies>(
        self,
        env: &Env<'_, R>,
        by: &Actor,
        key: &RequestKey,
    ) -> Ran<super::answers::TaskCreated> {
        let title = self.title.as_str();
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
        let answer = |task: &Written<String>| {
            let created = super::answers::TaskCreated {
                task_id: task.value().clone(),
                created: task.is_new(),
            };
            (Made::Done, created)
        };
        let decision = automation::tasking(&rule, title, &event_key);
        let (_, made, created) = env.answered(decision, answer, Refused::from).await?;
        Ok((made, created))
    }
}

/// A deal's card moved to a stage.
#[derive(Debug)]
pub struct MoveDeal {
    pub deal_id: String,
    pub stage: crate::deals::Stage,
}

/// Moves a card; a card on that stage already is answered with `moved: false`.
impl Command for MoveDeal {
    type Answer = crate::deals::DealView;
    const NAME: &'static str = "move_deal";
    const REQUIRES: &'static [Scope] = &[Scope::Write];
    const ONCE: Once = Once::WithEffect;

    async fn run<R: Replies>(
        self,
        env: &Env<'_, R>,
        by: &Actor,
        _key: &RequestKey,
    ) -> Ran<crate::deals::DealView> {
        let (id, to) = (self.deal_id.as_str(), self.stage);
        use crate::deals::{self, MoveError};
        LocalId::parse("deal_id", id).map_err(|_| Refused::not_found("deal"))?;
        let refused = |e| match e {
            MoveError::Store(e) => Refused::from(e),
            MoveError::NoDeal => Refused::not_found("deal"),
        };
        let answer =
            |moved: &Written<deals::Moved>| (Made::Done, moved_view(moved.value(), moved.is_new()));
        let moving = deals::moving(by.org(), id, to);
        let (_, made, view) = env.answered(moving, answer, refused).await?;
        Ok((made, view))
    }
}

/// A card as a move answers it: whether it moved now, and the stage it left.
fn moved_view(moved: &crate::deals::Moved, now: bool) -> crate::deals::DealView {
    crate::deals::DealView {
        moved: Some(now),
        from: Some(now.then_some(moved.from)),
        ..moved.deal.view()
    }
}

/// A prepaid debit refunded.
#[derive(Debug)]
pub struct RefundLedgerLine {
    pub ledger_id: String,
    pub reason: String,
}

/// Gives a debit line of the prepaid ledger back once, keyed by the line.
impl Command for RefundLedgerLine {
    type Answer = Refunded;
    const NAME: &'static str = "refund_ledger_line";
    const REQUIRES: &'static [Scope] = &[Scope::Write];
    const ONCE: Once = Once::WithEffect;

    async fn run<R: Replies>(
        self,
        env: &Env<'_, R>,
        by: &Actor,
        _key: &RequestKey,
    ) -> Ran<Refunded> {
        let (ledger_id, reason) = (self.ledger_id.as_str(), self.reason.as_str());
        use crate::ledger::correction::{self, RefundError};
        let reason = fields::line("reason", reason, 500)?;
        fields::reference("ledger_id", ledger_id, fields::REF_MAX)
            .map_err(|_| Refused::not_found("ledger line"))?;
        let refused = |e: RefundError| match e {
            RefundError::Store(e) => e.into(),
            // Found by its id on an index: a line written a moment ago may not be on it yet.
            RefundError::NotFound => Refused::not_found("ledger line").on_a_lagging_read(),
            RefundError::NotADebit(_) => Refused::conflict("not_a_debit", e.to_string()),
        };
        let who = by.id();
        let decision = correction::refunding(env.store, by.org(), ledger_id, (reason, &who))
            .await
            .map_err(refused)?;
        let answer = |refunded: &Written<correction::Refunded>| -> (Made, Refunded) {
            (Made::Done, EventAnswer::of(refunded))
        };
        let (_, made, refunded) = env.answered(decision, answer, refused).await?;
        Ok((made, refunded))
    }
}
