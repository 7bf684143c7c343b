//! The command side: every write a person's key, an assistant, the AI step or an operator asks
//! for is one [`Command`], performed by [`perform`]: the caller's authority (from the [`Actor`]
//! alone, never from the input's text), the request's key claimed, the typed input validated,
//! then the write through the store's primitive. The REST routes, the assistant's calls, the AI
//! step's tool calls and the operator's actions only translate their transport into
//! `(Actor, RequestKey, Command)` and the [`Done`] back.
//!
//! A model never moves money: a payment a model asks for becomes a `payment_proposed` review
//! item, and a person's `apply` on it books it ([`review`]).

pub mod ai;
pub mod amount;
pub mod answers;
mod crm;
pub mod model;
pub mod money;
mod operate;
mod records;
mod refused;
pub mod requests;
mod review;
pub mod setup;
pub mod statements;
pub mod tools;

pub use amount::AmountText;
pub use money::CreditInput;
pub use operate::Rotation;
pub use refused::{Made, Outcome, Refused, Why};
pub use review::{Decision, Named};
pub use tools::{Input, ToolCall};

use crate::effects::automation::Tool;
use crate::effects::AssistedReply;
use crate::ids::{EventKey, ExternalId, OrgId};
use crate::integrations::integration_pk;
use crate::orgs::{Key, Scope};
use crate::payments::Source;
use crate::store::Store;
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::future::Future;

/// Who asks. Authority is decided from this alone.
#[derive(Clone, Debug)]
pub enum Actor {
    /// A person's or a program's API key, with its scopes.
    Key(Key),
    /// The deployment's operator (`admin:…`), acting on an organisation's items.
    Admin { name: String, org: OrgId },
    /// A rule's AI step: it may reply and make tasks; what moves money it only proposes.
    Model {
        org: OrgId,
        rule_id: String,
        event_key: EventKey,
    },
}

impl Actor {
    pub fn org(&self) -> &OrgId {
        match self {
            Self::Key(key) => &key.org,
            Self::Admin { org, .. } | Self::Model { org, .. } => org,
        }
    }

    /// Who acted, as records name them: the key's id, the admin's public name, `ai:RULE`.
    pub fn id(&self) -> String {
        match self {
            Self::Key(key) => key.id.clone(),
            Self::Admin { name, .. } => name.clone(),
            Self::Model { rule_id, .. } => format!("ai:{rule_id}"),
        }
    }

    /// Refused `forbidden` unless the actor holds every scope of `needs`.
    fn may(&self, needs: &[Scope]) -> Result<(), Refused> {
        let lacks = match self {
            Self::Key(key) => needs.iter().find_map(|s| key.may(*s).err()),
            Self::Admin { .. } => None,
            // A model's commands are limited by `Command::for_model`, not by scopes.
            Self::Model { .. } => None,
        };
        lacks.map_or(Ok(()), |scope| Err(forbidden(scope)))
    }
}

/// How a request names itself, and so how it is claimed.
#[derive(Clone, Debug)]
pub enum RequestKey {
    /// A person's `Idempotency-Key`: each key's own.
    Header(String),
    /// An assistant's `call_id`: shared by every key of the organisation, kept with its answer.
    Call(ExternalId),
    /// One tool call of an AI run: a digest of (run, the model's call id).
    ToolCall(ExternalId),
    /// None: the command is idempotent by the state it moves (a void: draft to void).
    State,
    /// None: every request is a new one (another integration is another integration).
    New,
}

impl RequestKey {
    pub fn id(&self) -> &str {
        match self {
            Self::Header(id) => id,
            Self::Call(id) | Self::ToolCall(id) => id.as_str(),
            Self::State | Self::New => "",
        }
    }

    /// The key as the identity of the effect it asks for (a payment's external id). Ids that
    /// begin `review-` are an approval's own (`review::decided_id`): a client's key may not
    /// take one first and leave the item it names unappliable.
    fn identity(&self) -> Result<ExternalId, Refused> {
        if self.id().starts_with(REVIEW_PREFIX) {
            return Err(Refused::invalid(
                "invalid_idempotency_key",
                format!("a key beginning {REVIEW_PREFIX} is an approval's own"),
            ));
        }
        ExternalId::parse("Idempotency-Key", self.id())
            .map_err(|e| Refused::invalid("invalid_idempotency_key", e.to_string()))
    }
}

/// What the external id of a payment a person approved on a review item begins with.
pub(crate) const REVIEW_PREFIX: &str = "review-";

/// Every write that can be asked for, typed once.
#[derive(Debug)]
pub enum Command {
    /// A payment on an invoice (the "paid" button, the assistant): `amount` or the open rest.
    RegisterPayment {
        invoice_id: String,
        source: Source,
        amount: Option<AmountText>,
        /// For whom the key acted.
        actor: Option<String>,
    },
    /// A text into a Telegram or WhatsApp conversation, sent once by the automation worker.
    Reply {
        conversation_id: String,
        text: String,
    },
    CreateTask {
        title: String,
    },
    CreateCreditNote {
        invoice_id: String,
        note: money::CreditInput,
    },
    VoidInvoice {
        invoice_id: String,
    },
    /// An open review item resolved, with a decision on what it proposed.
    ResolveReview {
        pk: String,
        note: String,
        decision: Option<Decision>,
        /// What the decision names: the invoice (`apply` of kept money), the same payment
        /// (`same_money`).
        named: review::Named,
    },
    MoveDeal {
        deal_id: String,
        stage: crate::deals::Stage,
    },
    RefundLedgerLine {
        ledger_id: String,
        reason: String,
    },
    /// A person's decision on a run that needs a check.
    DecideRun {
        pk: String,
        decision: crate::ops::runs::Decision,
    },
    /// An integration's consequences held, or sent on.
    PauseIntegration {
        id: crate::ids::IntegrationId,
        paused: bool,
    },
    CreateInvoice(money::CreateInvoice),
    /// A copy on purpose: a new draft with the next number.
    DuplicateInvoice {
        invoice_id: String,
    },
    /// A bank row matched to an invoice, or (`None`) its match undone.
    MatchBankRow {
        tx_id: String,
        invoice_id: Option<String>,
        /// A person's say-so to match a row the statement has not confirmed yet.
        confirm_unconfirmed: bool,
    },
    /// A bank's CSV file, uploaded to its csv integration.
    UploadStatement {
        integration_id: String,
        file: Vec<u8>,
    },
    /// A monobank integration's statement imported now.
    StartImport {
        integration_id: String,
    },
    /// The softphone's report of a call.
    RecordCall(Box<crate::calls::CallFields>),
    /// A contact made by hand.
    CreateContact {
        name: String,
        phone: Option<String>,
        owner: Option<String>,
    },
    /// Money onto the prepaid wallet.
    TopUp {
        amount: AmountText,
        currency: String,
    },
    /// An automation rule: on a trigger, a task, a message, a reply or an AI step.
    CreateRule {
        trigger: String,
        action: Value,
    },
    /// Another API key, granting at most the asking key's scopes.
    CreateKey {
        name: String,
        scopes: Vec<String>,
    },
    RevokeKey {
        key_id: String,
    },
    AddMember {
        user_id: String,
        name: String,
    },
    /// A notification marked read.
    MarkRead {
        key: String,
    },
    /// A new integration (a provider's webhook, an outbound target, a bank's statement).
    CreateIntegration(Box<setup::NewIntegration>),
    /// Every secret of an integration replaced.
    RotateSecrets {
        id: crate::ids::IntegrationId,
        rotation: Rotation,
    },
}

impl Command {
    /// The scopes a key needs for it: every command named, so a new one cannot fall to a
    /// default.
    fn requires(&self) -> &'static [Scope] {
        match self {
            Self::ResolveReview { .. } | Self::RotateSecrets { .. } => &[Scope::Write, Scope::Ops],
            Self::CreateKey { .. } | Self::RevokeKey { .. } => &[Scope::Ops],
            Self::DecideRun { .. } | Self::PauseIntegration { .. } => &[Scope::Ops],
            Self::RegisterPayment { .. }
            | Self::Reply { .. }
            | Self::CreateTask { .. }
            | Self::CreateCreditNote { .. }
            | Self::VoidInvoice { .. }
            | Self::MoveDeal { .. }
            | Self::RefundLedgerLine { .. }
            | Self::CreateInvoice(_)
            | Self::DuplicateInvoice { .. }
            | Self::MatchBankRow { .. }
            | Self::UploadStatement { .. }
            | Self::StartImport { .. }
            | Self::RecordCall(_)
            | Self::CreateContact { .. }
            | Self::TopUp { .. }
            | Self::CreateRule { .. }
            | Self::AddMember { .. }
            | Self::MarkRead { .. }
            | Self::CreateIntegration(_) => &[Scope::Write],
        }
    }

    /// Whether a model may ask for it at all (a payment it may only propose).
    fn for_model(&self) -> bool {
        matches!(
            self,
            Self::Reply { .. } | Self::CreateTask { .. } | Self::RegisterPayment { .. }
        )
    }

    /// Whether its effect is identified by the request's key itself (a payment's or a credit
    /// note's identity, a task's run): then that effect's conditional write is the claim, and a
    /// repeat is answered by it. Every other command is claimed by a request record.
    fn claimed_by_effect(&self, key: &RequestKey) -> bool {
        match key {
            RequestKey::Call(_) => false,
            RequestKey::ToolCall(_) | RequestKey::State | RequestKey::New => true,
            RequestKey::Header(_) => matches!(
                self,
                Self::RegisterPayment { .. }
                    | Self::CreateCreditNote { .. }
                    | Self::VoidInvoice { .. }
                    | Self::TopUp { .. }
            ),
        }
    }
}

/// Refused `forbidden`: the key lacks `scope`.
pub fn forbidden(scope: Scope) -> Refused {
    Refused::forbidden(format!("this key lacks the `{}` scope", scope.name()))
}

/// How a reply leaves: the api queues it for the automation worker, the worker sends it.
pub trait Replies {
    fn reply(&self, reply: AssistedReply) -> impl Future<Output = Result<Value, Refused>> + Send;
}

/// A reply queued for the automation worker, which alone opens the channel's secret and sends
/// it once as its run; without a queue (the operator's function) it is unavailable.
pub struct Queued<'a>(pub Option<&'a crate::effects::queue::Publisher>);

impl Replies for Queued<'_> {
    async fn reply(&self, reply: AssistedReply) -> Result<Value, Refused> {
        let unavailable = || {
            let detail = "the reply could not be queued; retry";
            Refused::unavailable("replies_unavailable", detail)
        };
        let publisher = self.0.ok_or_else(unavailable)?;
        let message = crate::effects::Consequence::Assisted(reply);
        match publisher.publish(std::slice::from_ref(&message)).await {
            Ok(p) if p.sent == 1 => Ok(serde_json::json!({"state": "sending"})),
            _ => Err(unavailable()),
        }
    }
}

/// What a command needs besides its input.
pub struct Env<'a, R> {
    pub store: &'a Store,
    pub now: DateTime<Utc>,
    pub replies: &'a R,
    /// Where consequences go (a person's resend, a resumed integration's held events); only
    /// the operator's function has it.
    pub publisher: Option<&'a crate::effects::queue::Publisher>,
    /// The public base URL and what the stage allows (the api's: integrations are made there).
    pub site: Option<&'a setup::Site>,
    /// Large files' bucket and the import queue (the api's).
    pub imports: statements::Imports<'a>,
}

/// A command's answer: how it ended and its body, and whether it was a repeat's stored answer
/// (given with `Idempotent-Replayed: true`). A refusal a request record keeps is an answer
/// too, to the request and to its repeats.
#[derive(Debug)]
pub struct Done {
    pub outcome: Outcome,
    pub answer: Value,
    pub repeat: bool,
}

/// The one way in: authority, the request's key, validation, then the write.
pub async fn perform<R: Replies>(
    env: &Env<'_, R>,
    by: &Actor,
    key: &RequestKey,
    command: Command,
    asked: &[&[u8]],
) -> Result<Done, Refused> {
    by.may(command.requires())?;
    if matches!(by, Actor::Model { .. }) && !command.for_model() {
        return Err(Refused::forbidden(
            "an AI step may reply, make a task and propose a payment; nothing else",
        ));
    }
    let who = by.id();
    let asked = requests::Request {
        by: &who,
        shared: matches!(key, RequestKey::Call(_)).then(|| by.org()),
        key: key.id(),
        fingerprint: fingerprint(&command.name(), asked),
    };
    if command.claimed_by_effect(key) {
        // On the heap: the commands' futures together are too large for a worker's stack.
        let (made, answer) = Box::pin(run(env, by, key, command)).await?;
        let outcome = Outcome::Made(made);
        // Under a request's own key: kept to be asked for, and the effect's stored answer
        // given again is a replay.
        let own = matches!(key, RequestKey::Header(_));
        if own {
            asked
                .remember(env.store, (outcome, &answer), env.now)
                .await?;
        }
        return Ok(Done {
            repeat: own && answer["duplicate"] == true,
            outcome,
            answer,
        });
    }
    let work = || async {
        let (made, answer) = Box::pin(run(env, by, key, command)).await?;
        Ok((Outcome::Made(made), answer))
    };
    let (outcome, answer, repeat) = asked.once_telling(env.store, env.now, work).await?;
    Ok(Done {
        outcome,
        answer,
        repeat,
    })
}

/// What a request asked, digested for its record's claim: the command's name and the parts the
/// adapter names (a route and a body; a tool and its input), read only when a record claims it.
pub fn fingerprint(name: &str, parts: &[&[u8]]) -> String {
    use sha2::{Digest, Sha256};
    let mut digest = Sha256::new();
    digest.update(name);
    for part in parts {
        digest.update([0]);
        digest.update(part);
    }
    hex::encode(digest.finalize())
}

impl Command {
    /// Its name in a request record's fingerprint: a tool's own name, else the variant's.
    fn name(&self) -> String {
        let tool = match self {
            Self::RegisterPayment { .. } => Tool::RegisterPayment,
            Self::Reply { .. } => Tool::Reply,
            Self::CreateTask { .. } => Tool::CreateTask,
            Self::CreateCreditNote { .. } => Tool::CreateCreditNote,
            Self::ResolveReview { .. } => Tool::ResolveReview,
            Self::VoidInvoice { .. } => return "void_invoice".into(),
            Self::MoveDeal { .. } => return "move_deal".into(),
            Self::RefundLedgerLine { .. } => return "refund_ledger_line".into(),
            Self::DecideRun { .. } => return "decide_run".into(),
            Self::PauseIntegration { .. } => return "pause_integration".into(),
            Self::RotateSecrets { .. } => return "rotate_secrets".into(),
            Self::CreateIntegration(_) => return "create_integration".into(),
            Self::CreateRule { .. } => return "create_rule".into(),
            Self::CreateInvoice(_) => return "create_invoice".into(),
            Self::DuplicateInvoice { .. } => return "duplicate_invoice".into(),
            Self::MatchBankRow { .. } => return "match_bank_row".into(),
            Self::TopUp { .. } => return "top_up".into(),
            Self::RecordCall(_) => return "record_call".into(),
            Self::UploadStatement { .. } => return "upload_statement".into(),
            Self::StartImport { .. } => return "start_import".into(),
            Self::CreateContact { .. } => return "create_contact".into(),
            Self::CreateKey { .. } => return "create_key".into(),
            Self::RevokeKey { .. } => return "revoke_key".into(),
            Self::AddMember { .. } => return "add_member".into(),
            Self::MarkRead { .. } => return "mark_read".into(),
        };
        tool.name()
    }
}

async fn run<R: Replies>(
    env: &Env<'_, R>,
    by: &Actor,
    key: &RequestKey,
    command: Command,
) -> Result<(Made, Value), Refused> {
    match command {
        Command::RegisterPayment {
            invoice_id,
            source,
            amount,
            actor,
        } => match by {
            Actor::Model { .. } => money::propose(env, by, key, &invoice_id, amount.as_ref()).await,
            _ => {
                let asked = money::Asked {
                    source,
                    external_id: key.identity()?,
                    amount: amount.as_ref(),
                    actor: actor.as_deref(),
                };
                Ok((Made::Done, money::pay(env, by, &invoice_id, asked).await?))
            }
        },
        Command::CreateCreditNote { invoice_id, note } => {
            money::credit(env, by, key, &invoice_id, note).await
        }
        Command::VoidInvoice { invoice_id } => money::void(env, by, &invoice_id).await,
        Command::CreateInvoice(new) => money::create_invoice(env, by, &new).await,
        Command::DuplicateInvoice { invoice_id } => {
            money::duplicate_invoice(env, by, &invoice_id).await
        }
        Command::MatchBankRow {
            tx_id,
            invoice_id,
            confirm_unconfirmed,
        } => {
            let asked = (invoice_id.as_deref(), confirm_unconfirmed);
            money::match_row(env, by, &tx_id, asked).await
        }
        Command::TopUp { amount, currency } => {
            money::top_up(env, by, key, (&amount, &currency)).await
        }
        Command::ResolveReview {
            pk,
            note,
            decision,
            named,
        } => {
            owned(by, &pk, "REVIEW#", "review item")?;
            review::resolve(env, by, &pk, &note, (decision, &named)).await
        }
        other => Box::pin(run_records(env, by, key, other)).await,
    }
}

/// 404 unless the item under `pk` is one of the actor's organisation's `kind` items: whatever
/// an adapter decoded, a command acts in its actor's organisation only.
fn owned(by: &Actor, pk: &str, kind: &str, what: &str) -> Result<(), Refused> {
    match pk.starts_with(&by.org().pk(kind)) {
        true => Ok(()),
        false => Err(Refused::not_found(what)),
    }
}

/// The commands that move no money: replies, tasks, the organisation's records, operations.
async fn run_records<R: Replies>(
    env: &Env<'_, R>,
    by: &Actor,
    key: &RequestKey,
    command: Command,
) -> Result<(Made, Value), Refused> {
    match command {
        Command::Reply {
            conversation_id,
            text,
        } => crm::reply(env, by, key, &conversation_id, &text).await,
        Command::CreateTask { title } => crm::task(env, by, key, &title).await,
        Command::MoveDeal { deal_id, stage } => crm::move_deal(env, by, &deal_id, stage).await,
        Command::RefundLedgerLine { ledger_id, reason } => {
            crm::refund_line(env, by, &ledger_id, &reason).await
        }
        Command::DecideRun { pk, decision } => {
            owned(by, &pk, "RUN#", "run")?;
            operate::decide(env, by, &pk, decision).await
        }
        Command::PauseIntegration { id, paused } => {
            owned(by, &integration_pk(&id), "INTEGRATION#", "integration")?;
            operate::pause(env, by, &id, paused).await
        }
        Command::RotateSecrets { id, rotation } => {
            owned(by, &integration_pk(&id), "INTEGRATION#", "integration")?;
            operate::rotate(env, &id, rotation).await
        }
        Command::CreateIntegration(new) => setup::create(env, by, &new).await,
        Command::RecordCall(call) => records::record_call(env, by, &call).await,
        Command::UploadStatement {
            integration_id,
            file,
        } => statements::upload(env, by, &integration_id, &file).await,
        Command::StartImport { integration_id } => {
            statements::start_import(env, by, &integration_id).await
        }
        Command::CreateContact { name, phone, owner } => {
            let asked = (name.as_str(), phone.as_deref(), owner.as_deref());
            records::create_contact(env, by, asked).await
        }
        Command::CreateRule { trigger, action } => {
            records::create_rule(env, by, (&trigger, action)).await
        }
        Command::CreateKey { name, scopes } => records::create_key(env, by, (&name, &scopes)).await,
        Command::RevokeKey { key_id } => records::revoke_key(env, by, &key_id).await,
        Command::AddMember { user_id, name } => {
            records::add_member(env, by, (&user_id, &name)).await
        }
        Command::MarkRead { key } => records::mark_read(env, by, &key).await,
        // The money commands are `run`'s.
        _ => Err(Refused::not_found("route")),
    }
}
