//! The command side: every write a person's key, an assistant, the AI step or an operator asks
//! for is one [`Command`], performed by [`perform`]: the caller's authority (from the [`Actor`]
//! alone, never from the input's text), the typed input validated, then the write through the
//! store's primitive, the request's record under its key a step of it (`requests`). The REST routes, the assistant's calls, the AI
//! step's tool calls and the operator's actions only translate their transport into
//! `(Actor, RequestKey, Command)` and the [`Performed`] answer (typed as the command's own
//! `Answer`) back into their transport's words.
//!
//! A model never moves money: a payment a model asks for becomes a `payment_proposed` review
//! item, and a person's `apply` on it books it ([`review`]).

pub mod ai;
pub mod amount;
pub mod answers;
pub mod asks;
pub mod crm;
pub mod model;
pub mod money;
pub mod operate;
pub mod proposals;
pub mod reads;
pub mod records;
mod refused;
pub mod requests;
pub mod review;
pub mod setup;
pub mod statements;
pub mod tools;

pub use amount::AmountText;
pub use money::CreditInput;
pub use operate::Rotation;
pub use refused::{Made, Outcome, Refused, Why};
pub use review::{Decision, Named};
pub use tools::{Input, ToolCall};

use crate::effects::AssistedReply;
use crate::ids::{EventKey, ExternalId, OrgId};
use crate::orgs::{Key, Scope};
use crate::store::request::{AnswerOf, Repeats, RequestError, WithRequest};
use crate::store::{Store, Written};
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::future::Future;

/// Who asks. Authority is decided from this alone.
#[derive(Clone, Debug)]
pub enum Actor {
    /// A person's API key, on a REST route or the operator's page, with its scopes.
    Key(Key),
    /// A program acting with an API key through the assistant's route (an agent, the MCP
    /// server): what the key's scopes allow, except what only a person decides.
    Assistant(Key),
    /// The deployment's operator (`admin:…`), acting on an organisation's items.
    Admin { name: String, org: OrgId },
    /// A rule's AI step: it may reply and make tasks; what moves money it only proposes.
    Model {
        org: OrgId,
        rule_id: String,
        event_key: EventKey,
        /// What its trigger carried (a message's conversation, sender and text): data a
        /// person is shown beside what the model proposes, never a say in what it may.
        cause: Value,
    },
}

impl Actor {
    pub fn org(&self) -> &OrgId {
        match self {
            Self::Key(key) | Self::Assistant(key) => &key.org,
            Self::Admin { org, .. } | Self::Model { org, .. } => org,
        }
    }

    /// Who acted, as records name them: the key's id, the admin's public name, `ai:RULE`.
    pub fn id(&self) -> String {
        match self {
            Self::Key(key) | Self::Assistant(key) => key.id.clone(),
            Self::Admin { name, .. } => name.clone(),
            Self::Model { rule_id, .. } => format!("ai:{rule_id}"),
        }
    }

    /// Refused `forbidden` unless the actor holds every scope of `needs`.
    fn may(&self, needs: &[Scope]) -> Result<(), Refused> {
        let lacks = match self {
            Self::Key(key) | Self::Assistant(key) => needs.iter().find_map(|s| key.may(*s).err()),
            Self::Admin { .. } => None,
            // A model's commands are limited by `Command::for_model`, not by scopes.
            Self::Model { .. } => None,
        };
        lacks.map_or(Ok(()), |scope| Err(forbidden(scope)))
    }

    /// Refused `person_required` unless a person asks (a key on a REST route or the
    /// operator's page, the admin): what a model proposes no program approves.
    fn person(&self) -> Result<(), Refused> {
        match self {
            Self::Key(_) | Self::Admin { .. } => Ok(()),
            Self::Assistant(_) | Self::Model { .. } => Err(Refused::new(
                Why::Forbidden,
                "person_required",
                "only a person applies what a model proposes: on the operator's page",
            )),
        }
    }
}

/// How a request names itself, and so how a repeat of it is known.
#[derive(Clone, Debug)]
pub enum RequestKey {
    /// A person's `Idempotency-Key`: its request's record is each API key's own; an effect
    /// the key names (a payment's external id, a credit note's or a top-up's key) is the
    /// organisation's, so another API key of it sending the same key is that effect's repeat.
    Header(String),
    /// An assistant's `call_id`: shared by every key of the organisation, kept with its answer.
    Call(ExternalId),
    /// One tool call of an AI run: a digest of (run, the model's call id).
    ToolCall(ExternalId),
    /// None named: the command's own way of being once holds, with no record (`Once::ByState`,
    /// `Once::Each`); a command that needs a key is refused `missing_idempotency_key`.
    None,
}

impl RequestKey {
    pub fn id(&self) -> &str {
        match self {
            Self::Header(id) => id,
            Self::Call(id) | Self::ToolCall(id) => id.as_str(),
            Self::None => "",
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
pub(crate) const REVIEW_PREFIX: &str = crate::review::DECIDED_PREFIX;

/// How a command's run ends: done with its answer, or refused.
pub type Ran<T = Value> = Result<(Made, T), Refused>;

/// How a repeat of a command is known, as the command itself says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Once {
    /// By a request record put after its work, which is not one transaction (a DLQ's messages
    /// moved, a worker paused, an approval's conditional writes) and is safe twice by its own
    /// conditions: a repeat gets the record's answer and does nothing (`Request::once`).
    AfterWork,
    /// By its effect, whose identity is the request's key (a payment's external id, a credit
    /// note's or a top-up's key): that effect's conditional write is the key's, and a repeat
    /// is answered by it. Under a client's key the effect's decision is written with the
    /// request's record in its transaction ([`Env::write`]).
    ByEffect,
    /// By a request record written in the same transaction as its effect ([`Env::write`]),
    /// whose effect carries no key of the request (a deal's move, a task): a repeat gets the
    /// record's answer, and nothing says "running".
    WithEffect,
    /// By the state it moves (a void: draft to void; a match; a revocation; a read mark; a call
    /// keyed by its own id): a repeat finds the state moved. It needs no key; under one, its
    /// record is put after its work, as `AfterWork`'s.
    ByState,
    /// Never: every request is a new one (another integration is another integration, another
    /// contact another contact). It needs no key; under one, as `ByState`.
    Each,
}

impl Once {
    /// Whether a request must name a key: a command that is once only by a key's record, or
    /// whose effect the key names.
    pub fn needs_key(self) -> bool {
        matches!(self, Self::ByEffect | Self::WithEffect | Self::AfterWork)
    }

    /// How a request's record is written in its effect's transaction under `key`, as the
    /// command says: under an `Idempotency-Key`, a command keyed by it answers a repeat from its
    /// effect; an assistant's `call_id` (shared by the organisation's keys) and a command whose
    /// effect carries no key of the request, from the record. `None`: recorded after its work,
    /// or not at all.
    fn recorded_with_effect(self, key: &RequestKey) -> Option<Repeats> {
        match (key, self) {
            (RequestKey::Header(_), Once::ByEffect) => Some(Repeats::FromEffect),
            (RequestKey::Header(_) | RequestKey::Call(_), Once::WithEffect)
            | (RequestKey::Call(_), Once::ByEffect) => Some(Repeats::FromRecord),
            _ => None,
        }
    }

    /// Whether no record keeps it: an AI run's tool call is known by its effect alone, a
    /// request that names no key by the command's own once-ness (`Once::ByState`,
    /// `Once::Each`). (Under any other key, a record: written with its effect,
    /// `recorded_with_effect`, or after its work, `Request::once`.)
    fn claimed_by_effect(key: &RequestKey) -> bool {
        matches!(key, RequestKey::ToolCall(_) | RequestKey::None)
    }
}

/// Whose a command's object is: an organisation's records, or the deployment's own parts
/// (its queues, its workers), which the admin alone acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Whose {
    Organisation,
    Deployment,
}

/// A write asked for from inside. Its name, its authority, whether a model may ask for it and
/// how a repeat of it is known are the type's own, written once; `run` does it as `by`.
pub trait Command: Sized + Send + std::fmt::Debug {
    type Answer: serde::Serialize + Send + Sync;
    /// Its name: an operation's, a tool's, a request record's fingerprint's.
    const NAME: &'static str;
    /// The scopes a key needs for it.
    const REQUIRES: &'static [Scope];
    /// What it acts on: a deployment's part is the admin's alone, whatever a key's scopes.
    const WHOSE: Whose = Whose::Organisation;
    /// Whether a rule's AI step may ask for it (a payment it may only propose).
    const FOR_MODEL: bool = false;
    const ONCE: Once = Once::AfterWork;

    fn run<R: Replies>(
        self,
        env: &Env<'_, R>,
        by: &Actor,
        key: &RequestKey,
    ) -> impl Future<Output = Ran<Self::Answer>> + Send;

    /// Whether `answer` tells of its effect found done under the request's key (a
    /// `Once::ByEffect` command's payment, credit note or top-up booked before): then it is a
    /// repeat's answer, given with `Idempotent-Replayed`.
    fn found_done(_answer: &Self::Answer) -> bool {
        false
    }
}

/// The commands an adapter reads out of its input, listed once: the enum a tool call or an
/// operator's action reads into, and its dispatch to each type's own [`Command`]. (A REST route
/// performs its command's own type, `perform::<C>`, and needs no line here.)
macro_rules! commands {
    ($($variant:ident($ty:ty)),* $(,)?) => {
        /// Every write a tool call or an operator's action can ask for.
        #[derive(Debug)]
        pub enum AnyCommand {
            $($variant($ty)),*
        }

        $(impl From<$ty> for AnyCommand {
            fn from(command: $ty) -> Self {
                Self::$variant(command)
            }
        })*

        impl AnyCommand {
            pub fn name(&self) -> &'static str {
                match self {
                    $(Self::$variant(_) => <$ty as Command>::NAME),*
                }
            }

            /// Whose its object is (`Command::WHOSE`).
            pub fn whose(&self) -> Whose {
                match self {
                    $(Self::$variant(_) => <$ty as Command>::WHOSE),*
                }
            }

            /// [`perform`]s it, its answer as JSON: for the adapters that read a command out
            /// of their input (a tool's call, an operator's action). Each on the heap: the
            /// commands' futures together are too large for a worker's stack.
            pub async fn perform<R: Replies>(
                self,
                env: &Env<'_, R>,
                by: &Actor,
                key: &RequestKey,
                asked: &[&[u8]],
            ) -> Result<Performed<Value>, Refused> {
                match self {
                    $(Self::$variant(command) => {
                        Box::pin(perform(env, by, key, command, asked)).await.map(Performed::erased)
                    })*
                }
            }
        }
    };
}

commands! {
    RegisterPayment(money::RegisterPayment),
    CreateCreditNote(money::CreateCreditNote),
    ResolveReview(review::ResolveReview),
    Reply(crm::Reply),
    CreateTask(crm::CreateTask),
    DecideRun(operate::DecideRun),
    PauseIntegration(operate::PauseIntegration),
    ReplayEvent(operate::ReplayEvent),
    ReplayWindow(operate::ReplayWindow),
    RedriveDeadLetters(operate::RedriveDeadLetters),
    PauseWorker(operate::PauseWorker),
    RecoverWindow(operate::RecoverWindow),
}

/// Refused `forbidden`: the key lacks `scope`.
pub fn forbidden(scope: Scope) -> Refused {
    Refused::forbidden(format!("this key lacks the `{}` scope", scope.name()))
}

/// How a reply leaves: the api queues it for the automation worker, the worker sends it.
pub trait Replies: Sync {
    fn reply(
        &self,
        reply: AssistedReply,
    ) -> impl Future<Output = Result<answers::ReplyState, Refused>> + Send;
}

/// The replies of an adapter that sends none itself (the api, the operator's function): a
/// person's or an assistant's reply is stored with its call and the stream queues it for the
/// automation worker, which alone opens the channel's secret (`crm::Reply`); a model's reply
/// only its AI step sends, so here it is refused.
pub struct Stored;

impl Replies for Stored {
    async fn reply(&self, _: AssistedReply) -> Result<answers::ReplyState, Refused> {
        Err(Refused::forbidden(
            "a model's reply is sent by its AI step, not through this route",
        ))
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
    /// The deployment's queues and workers (the operator's function's).
    pub deployment: Deployment<'a>,
    /// The request a client's key names, when its record is written with its effect
    /// (`Once::ByEffect`, `Once::WithEffect`): set by [`perform`] ([`Env::write`]).
    pub request: Option<(&'a requests::Request<'a>, Repeats)>,
}

impl<R> Env<'_, R> {
    /// Writes `decision`; under a client's key, with the request's record in the same
    /// transaction (`store::request`), keeping the answer `answer` makes of the plan's outcome
    /// (`true`: a repeat's). The key held by another request is refused
    /// `idempotency_key_reused`; `refused` says what the decision's own error is. (A command
    /// writes through [`Env::answered`], which makes both answers of one function.)
    async fn write<D, A>(
        &self,
        mut decision: D,
        answer: A,
        refused: impl FnOnce(D::Error) -> Refused,
    ) -> Result<Written<D::Out>, Refused>
    where
        D: crate::store::Decision,
        A: Fn(&D::Out, bool) -> (Outcome, Value) + Send + Sync + 'static,
    {
        let Some((request, repeats)) = self.request else {
            return self
                .store
                .write(&mut decision, self.now)
                .await
                .map_err(refused);
        };
        let answer: AnswerOf<D::Out> = Box::new(move |out, repeat| {
            let (outcome, json) = answer(out, repeat);
            requests::answer(outcome, &json)
        });
        let record = request.record(self.now);
        let mut with = WithRequest::new(decision, record, answer, repeats);
        match self.store.write(&mut with, self.now).await {
            Ok(written) => Ok(written),
            Err(RequestError::Reused) => Err(idempotency_key_reused()),
            Err(RequestError::Answered(record)) => Err(match requests::kept(&record) {
                Some(kept) => Refused::answered(kept),
                None => Refused::from(crate::store::item::malformed(&record, "answer")),
            }),
            Err(RequestError::Decision(e)) => Err(refused(e)),
        }
    }
}

impl<R> Env<'_, R> {
    /// Writes `decision` and answers with what `answer` reads off how it ended. The one
    /// function gives the caller its answer now and the request's record (under a client's key)
    /// the answer a repeat is given, read off the outcome as a repeat's: the two cannot differ.
    pub(crate) async fn answered<D, T, A>(
        &self,
        decision: D,
        answer: A,
        refused: impl FnOnce(D::Error) -> Refused,
    ) -> Result<(Written<D::Out>, Made, T), Refused>
    where
        D: crate::store::Decision,
        D::Out: Clone + 'static,
        T: serde::Serialize + 'static,
        A: Fn(&Written<D::Out>) -> (Made, T) + Clone + Send + Sync + 'static,
    {
        let written = self
            .write(decision, recorded(answer.clone()), refused)
            .await?;
        let (made, answer) = answer(&written);
        Ok((written, made, answer))
    }
}

/// What a request's record keeps of an outcome: `answer` of it as a repeat's (`true`) or a new
/// one's, as JSON with how it was made.
fn recorded<O, T, A>(answer: A) -> impl Fn(&O, bool) -> (Outcome, Value) + Send + Sync + 'static
where
    O: Clone + 'static,
    T: serde::Serialize + 'static,
    A: Fn(&Written<O>) -> (Made, T) + Send + Sync + 'static,
{
    move |out, repeat| {
        let (made, answer) = answer(&as_written(out, repeat));
        (Outcome::Made(made), answers::json(&answer))
    }
}

impl<R> Env<'_, R> {
    /// Writes `decision` for a command no key keeps (`Once::ByState`, `Once::Each`): the state
    /// it moves, or its being new, is how a repeat is known. (Under a client's key such a
    /// command's record is put after its work, `Request::once`.)
    pub(crate) async fn apply<D: crate::store::Decision, E>(
        &self,
        mut decision: D,
        refused: impl FnOnce(D::Error) -> E,
    ) -> Result<Written<D::Out>, E> {
        self.store
            .write(&mut decision, self.now)
            .await
            .map_err(refused)
    }
}

/// `out` as the write that gave it: new, or a repeat (what a request's record keeps of it).
pub(crate) fn as_written<T: Clone>(out: &T, repeat: bool) -> Written<T> {
    match repeat {
        true => Written::Repeat {
            stored: out.clone(),
        },
        false => Written::New(out.clone()),
    }
}

/// Refused `idempotency_key_reused`: the key was used with another request.
pub(crate) fn idempotency_key_reused() -> Refused {
    Refused::conflict(
        "idempotency_key_reused",
        "this Idempotency-Key was used with another request",
    )
}

/// What only the operator's function holds: the deployment's queues with their DLQs, and the
/// workers' event source mappings.
#[derive(Clone, Copy, Default)]
pub struct Deployment<'a> {
    pub queues: Option<&'a crate::ops::queues::Queues>,
    pub consumers: Option<&'a crate::ops::consumers::Consumers>,
    /// Where a recovery from a provider is handed: the function that opens the provider's key.
    pub recovery: Option<&'a dyn operate::Recovers>,
}

/// How a performed command ended (a refusal told now is the `Err` beside it): its own typed
/// answer, given now, or the answer a request's record kept, given again.
#[derive(Debug)]
pub enum Performed<T> {
    /// Answered now: how it ended and its answer. `repeat`: its effect was found done under
    /// the request's key (given with `Idempotent-Replayed: true`).
    Now {
        outcome: Outcome,
        answer: T,
        repeat: bool,
    },
    /// An earlier request's answer under this key (a refusal it kept too), as its record kept
    /// it: given again, with `Idempotent-Replayed: true`.
    Again(requests::Kept),
}

impl<T: serde::Serialize> Performed<T> {
    /// A command's answer, done now.
    fn made(made: Made, answer: T, repeat: bool) -> Self {
        Self::Now {
            outcome: Outcome::Made(made),
            answer,
            repeat,
        }
    }

    pub fn outcome(&self) -> Outcome {
        match self {
            Self::Now { outcome, .. } => *outcome,
            Self::Again(kept) => kept.outcome,
        }
    }

    /// Whether it is a repeat's answer: an effect found done, or a record's kept answer.
    pub fn repeat(&self) -> bool {
        match self {
            Self::Now { repeat, .. } => *repeat,
            Self::Again(_) => true,
        }
    }

    /// The answer as JSON, for the adapters that hold no command's type.
    pub fn erased(self) -> Performed<Value> {
        match self {
            Self::Now {
                outcome,
                answer,
                repeat,
            } => Performed::Now {
                outcome,
                answer: answers::json(&answer),
                repeat,
            },
            Self::Again(kept) => Performed::Again(kept),
        }
    }
}

/// The one way in: authority, the request's key, validation, then the write; answered with
/// the command's own typed answer.
pub async fn perform<C: Command, R: Replies>(
    env: &Env<'_, R>,
    by: &Actor,
    key: &RequestKey,
    command: C,
    asked: &[&[u8]],
) -> Result<Performed<C::Answer>, Refused> {
    by.may(C::REQUIRES)?;
    if C::WHOSE == Whose::Deployment && !matches!(by, Actor::Admin { .. }) {
        return Err(Refused::forbidden(
            "the queues and workers are the deployment's: the admin token only",
        ));
    }
    if matches!(by, Actor::Model { .. }) && !C::FOR_MODEL {
        return Err(Refused::forbidden(
            "an AI step may reply, make a task and propose a payment; nothing else",
        ));
    }
    if matches!(key, RequestKey::None) && C::ONCE.needs_key() {
        return Err(Refused::invalid(
            "missing_idempotency_key",
            "Idempotency-Key header is required",
        ));
    }
    let who = by.id();
    let asked = requests::Request {
        by: &who,
        shared: matches!(key, RequestKey::Call(_)).then(|| by.org()),
        key: key.id(),
        fingerprint: fingerprint(C::NAME, asked),
    };
    if let Some(repeats) = C::ONCE.recorded_with_effect(key) {
        return with_effect(env, by, (key, (&asked, repeats)), command).await;
    }
    if Once::claimed_by_effect(key) {
        let (made, answer) = Box::pin(command.run(env, by, key)).await?;
        return Ok(Performed::made(made, answer, false));
    }
    let work = async {
        let (made, answer) = Box::pin(command.run(env, by, key)).await?;
        Ok((Outcome::Made(made), answer))
    };
    asked.once(env.store, env.now, work).await
}

/// `command` run with the request's record written in its effect's transaction (`Env::write`):
/// a repeat is the effect's stored answer given again, or the record's. A request answered from
/// its record is answered so when it is refused too: the refusal is kept as the record's
/// answer (`Request::keep_refusal`), unless a retry may get past it.
async fn with_effect<C: Command, R: Replies>(
    env: &Env<'_, R>,
    by: &Actor,
    (key, (asked, repeats)): (&RequestKey, (&requests::Request<'_>, Repeats)),
    command: C,
) -> Result<Performed<C::Answer>, Refused> {
    let env = Env {
        request: Some((asked, repeats)),
        ..*env
    };
    match Box::pin(command.run(&env, by, key)).await {
        Ok((made, answer)) => {
            let repeat = C::found_done(&answer);
            Ok(Performed::made(made, answer, repeat))
        }
        Err(refused) => match refused.kept() {
            Some(kept) => Ok(Performed::Again(kept)),
            None if repeats == Repeats::FromRecord && !refused.passing() => {
                match asked.keep_refusal(env.store, &refused, env.now).await? {
                    Some(kept) => Ok(Performed::Again(kept)),
                    None => Err(refused),
                }
            }
            None => Err(refused),
        },
    }
}

/// What a request asked, digested for its record: the command's name and the parts the adapter
/// names (a route and a body; a tool and its input), read only when a record keeps it.
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

/// 404 unless the item under `pk` is one of the actor's organisation's `kind` items: whatever
/// an adapter decoded, a command acts in its actor's organisation only.
fn owned(by: &Actor, pk: &str, kind: &str, what: &str) -> Result<(), Refused> {
    match pk.starts_with(&by.org().pk(kind)) {
        true => Ok(()),
        false => Err(Refused::not_found(what)),
    }
}
