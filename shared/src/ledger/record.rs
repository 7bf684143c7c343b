//! Recording one carrier event: one consistent `BatchGetItem` (the acknowledgement, the wallet,
//! the message's inbox line, the integration, and for an incoming SMS its conversation and
//! sender), the decision, then one `TransactWriteItems` that puts the acknowledgement under
//! `attribute_not_exists` together with everything the event writes. A stored acknowledgement is
//! answered from that read alone. The message's ledger lines (its debit and its refund) are read
//! only when its inbox line is there: every line is written with its message's inbox line, in
//! one transaction, so a message without one has none, and its first event (a `sms.sent`, the
//! most of them) reads four items, not six.

use super::ack::replayed;
pub use super::ack::{ack_pk, Ack, Acked, Recorded, ACK_KIND};
use super::decide::{Flag, InboxWrite, Plan};
use super::inbox::{event_set, inbox_pk};
use super::line::message_line_pk;
use super::wallet::wallet_pk;
use super::{
    decide, InboxLine, LedgerError, LedgerLine, LineKind, Seen, SmsEvent, SmsType, Wallet,
};
use crate::ids::OrgId;
use crate::integrations::Integration;
use crate::messages::providers::MessageProvider;
use crate::messages::{Incoming, Placement, Sender};
use crate::review::{Kind, ReviewItem};
use crate::store::counters;
use crate::store::item::{n, s, tag_name, Read};
use crate::store::{Cond, Decision, Item, Plan as Write, Seen as StoreSeen, Step, Store, Update};
use chrono::{DateTime, Utc};

/// The keys one event reads, in order.
struct Keys {
    ack: String,
    wallet: String,
    debit: String,
    refund: String,
    inbox: String,
    /// The integration's item, read with the rest: a paused one holds the event.
    integration: String,
    placement: Option<(Placement, Incoming)>,
}

impl Keys {
    fn of(integration: &Integration, event: &SmsEvent) -> Self {
        let org = integration.org();
        let (i, m, d) = (
            &event.integration_id,
            &event.message_id,
            event.kind.direction(),
        );
        let placement = (event.kind == SmsType::Received).then(|| {
            let incoming = incoming(event);
            (Placement::of(integration, &incoming), incoming)
        });
        Self {
            ack: ack_pk(org, i, &event.event_id),
            wallet: wallet_pk(org),
            debit: message_line_pk(org, i, m, d, LineKind::Debit),
            refund: message_line_pk(org, i, m, d, LineKind::Refund),
            inbox: inbox_pk(org, i, m, d),
            integration: crate::integrations::integration_pk(&integration.id),
            placement,
        }
    }

    /// What the first read takes, in this order (`slot`); the debit and refund are read after
    /// it, when the message has an inbox line (`RecordSms::prepare`).
    fn all(&self) -> Vec<String> {
        let mut pks = vec![
            self.ack.clone(),
            self.wallet.clone(),
            self.inbox.clone(),
            self.integration.clone(),
        ];
        if let Some((p, _)) = &self.placement {
            pks.extend([p.conversation_pk.clone(), p.identity_pk.clone()]);
        }
        pks
    }
}

/// An incoming SMS as a message of its conversation: the chat is the sender's number, and
/// replies would go out through the number it was sent to.
fn incoming(event: &SmsEvent) -> Incoming {
    Incoming {
        provider_id: event.message_id.clone(),
        chat_id: event.from.clone(),
        from: Sender {
            identity: event.from.clone(),
            name: event.from.clone(),
            phone: Some(event.from.clone()),
        },
        text: event.text.clone().unwrap_or_default(),
        attachments: Vec::new(),
        sent_at: Some(event.at),
        reply_via: Some(event.to.clone()),
        notes: Vec::new(),
        raw: None,
    }
}

/// Records `event` once: a repeat of its event id gets the stored answer; a re-push of its
/// message writes only its own acknowledgement.
pub async fn record(
    store: &Store,
    integration: &Integration,
    event: &SmsEvent,
    now: DateTime<Utc>,
) -> Result<Recorded, LedgerError> {
    write(store, (integration, event), false, now).await
}

/// Decides an event a paused integration held (`record` stored it as `held`), now that it
/// resumed: as if it came now, once (a second release finds it decided and gets its answer).
pub async fn release(
    store: &Store,
    integration: &Integration,
    event: &SmsEvent,
    now: DateTime<Utc>,
) -> Result<Recorded, LedgerError> {
    write(store, (integration, event), true, now).await
}

async fn write(
    store: &Store,
    (integration, event): (&Integration, &SmsEvent),
    release: bool,
    now: DateTime<Utc>,
) -> Result<Recorded, LedgerError> {
    let mut decision = RecordSms {
        store,
        integration,
        event,
        keys: Keys::of(integration, event),
        release,
        lines: (None, None),
    };
    store.write(&mut decision, now).await
}

/// Where the first read's items are, in `Keys::all`'s order (the acknowledgement first:
/// `Seen::stored`).
mod slot {
    pub const WALLET: usize = 1;
    pub const INBOX: usize = 2;
    pub const INTEGRATION: usize = 3;
    pub const CONVERSATION: usize = 4;
    pub const IDENTITY: usize = 5;
}

struct RecordSms<'a> {
    store: &'a Store,
    integration: &'a Integration,
    event: &'a SmsEvent,
    keys: Keys,
    /// Deciding a held event: its stored `held` acknowledgement is updated, not a repeat.
    release: bool,
    /// The message's debit and refund as this round read them (`prepare`): none without its
    /// inbox line.
    lines: (Option<Item>, Option<Item>),
}

impl RecordSms<'_> {
    /// When the integration was paused, if it is and this is not its release: the event is held.
    fn paused_since<'s>(&self, found: &'s StoreSeen) -> Option<&'s str> {
        found
            .get(slot::INTEGRATION)
            .and_then(crate::integrations::pause::paused_since)
            .filter(|_| !self.release)
    }

    /// Whether the event is decided on its message's lines: not a repeat, not held, and the
    /// message has an inbox line (without one it has no line).
    fn reads_lines(&self, found: &StoreSeen) -> bool {
        found.get(slot::INBOX).is_some()
            && matches!(self.decided_before(found), Ok(None))
            && self.paused_since(found).is_none()
    }

    /// A stored acknowledgement's answer, unless it is a held one this call releases.
    fn decided_before(&self, found: &StoreSeen) -> Result<Option<Write<Acked>>, LedgerError> {
        let held = found
            .stored()
            .map(|ack| ack.opt_str("outcome") == Some(HELD));
        match (found.stored(), held, self.release) {
            // Released before (or never held): what it answered.
            (Some(ack), Some(false), _) | (Some(ack), _, false) => {
                Ok(Some(Write::Done(replayed(ack, self.event)?)))
            }
            (None, _, true) => Err(LedgerError::NotHeld),
            _ => Ok(None),
        }
    }
}

impl Decision for RecordSms<'_> {
    type Out = Acked;
    type Error = LedgerError;

    fn keys(&self) -> Vec<String> {
        self.keys.all()
    }

    /// The message's debit and refund, read consistently when the event is decided on them
    /// (every round: what the first read found may have moved).
    async fn prepare(&mut self, found: &StoreSeen) -> Result<(), LedgerError> {
        self.lines = (None, None);
        if self.reads_lines(found) {
            let keys = [self.keys.debit.clone(), self.keys.refund.clone()];
            let mut read = self.store.get_many(&keys).await?.into_iter();
            self.lines = (read.next().flatten(), read.next().flatten());
        }
        Ok(())
    }

    fn decide(&self, found: &StoreSeen, now: DateTime<Utc>) -> Result<Write<Acked>, LedgerError> {
        let (event, org) = (self.event, self.integration.org());
        if let Some(done) = self.decided_before(found)? {
            return Ok(done);
        }
        if let Some(since) = self.paused_since(found) {
            return Ok(hold(
                self.integration,
                event,
                Wallet::from_item(found.get(slot::WALLET))?,
                since,
                now,
            ));
        }
        let line = |item: &Option<Item>| item.as_ref().map(LedgerLine::from_item).transpose();
        let seen = Seen {
            wallet: Wallet::from_item(found.get(slot::WALLET))?,
            debit: line(&self.lines.0)?,
            refund: line(&self.lines.1)?,
            inbox: found
                .get(slot::INBOX)
                .map(InboxLine::from_item)
                .transpose()?,
        };
        let plan = decide(event, org, &seen, now);
        let mut steps = steps(org, event, &seen, &plan, now);
        if let (true, Some((placement, incoming))) = (plan.message, &self.keys.placement) {
            let (_, mut placed) = placement.steps(
                self.integration,
                MessageProvider::Sms,
                incoming,
                found.get(slot::CONVERSATION).cloned(),
                found.get(slot::IDENTITY).cloned(),
                Vec::new(),
                now,
            )?;
            counted_as_ack(&steps, &mut placed);
            steps.extend(placed);
        }
        if self.release {
            decided_now(&mut steps, &plan.answer);
        }
        let out = Acked {
            answer: plan.answer,
            review: !plan.flags.is_empty(),
            fingerprint: event.fingerprint.clone(),
        };
        Ok(match plan.writes {
            true => Write::Write { steps, out },
            false => Write::Acknowledge { steps, out },
        })
    }
}

/// The outcome of an acknowledgement stored while its integration was paused.
pub const HELD: &str = "held";

/// A paused integration's event: its acknowledgement stored as `held` (waiting, with what would
/// carry its consequences: an incoming SMS's message, or itself), one mark to send it on in
/// event order, and the answer: the wallet unchanged, no ledger line.
fn hold(
    integration: &Integration,
    event: &SmsEvent,
    wallet: Wallet,
    since: &str,
    now: DateTime<Utc>,
) -> Write<Acked> {
    let org = integration.org();
    let answer = super::decide::SmsAnswer {
        ack: event.event_id.clone(),
        duplicate: false,
        held: Some(true),
        ledger_id: None,
        inbox_id: None,
        balance: wallet.shown_balance(),
        message_id: event.message_id.clone(),
        kind: event.kind,
        status: None,
        conversation_id: None,
        review: None,
    }
    .to_json();
    let ack = Ack {
        org: org.clone(),
        event: event.clone(),
        answer: answer.clone(),
        outcome: HELD,
    };
    let mut item = ack.to_item();
    let pk = item.str_of("pk").unwrap_or_default().to_owned();
    // It waits on its own decision (an incoming one's message is placed only then).
    item.insert("waits".into(), s(&pk));
    let mark = crate::integrations::pause::held_mark(&integration.id, &pk, event.at, now)
        .str("sms_event", super::held::to_json(event))
        .build();
    let mut steps = vec![Step::PutNew(item)];
    steps.extend(crate::integrations::pause::hold_steps(
        &integration.id,
        since,
        mark,
        now,
    ));
    Write::Write {
        steps,
        out: Acked {
            answer,
            review: false,
            fingerprint: event.fingerprint.clone(),
        },
    }
}

/// A released event's acknowledgement: the stored `held` one takes the answer and outcome now
/// decided, only while it is still `held` (a second release meanwhile is refused and reads).
fn decided_now(steps: &mut [Step], answer: &serde_json::Value) {
    let Some(Step::PutNew(ack)) = steps.first() else {
        return;
    };
    let pk = ack.opt_str("pk").unwrap_or_default().to_owned();
    let outcome = ack.opt_str("outcome").unwrap_or("stored").to_owned();
    steps[0] = Step::Update {
        pk,
        update: Update::new()
            .set("answer", s(answer.to_string()))
            .set("outcome", s(outcome))
            .when(Cond::Equals("outcome".into(), s(HELD))),
    };
}

/// An incoming SMS's consequences are its conversation message's, and the operator counts them
/// as the SMS event's: the message placed with it names the acknowledgement and its place on the
/// SMS list (`counters::COUNTED_AS`, `COUNTED_AT`), so what of them waits on a queue is the
/// event's (the fan-out puts the mark). (A held event decided now waits on its decision no
/// more: its mark is settled after the decision, `waiting::settle_held`.)
fn counted_as_ack(steps: &[Step], placed: &mut [Step]) {
    let Some(Step::PutNew(ack)) = steps.first() else {
        return;
    };
    let (Some(pk), Some(position)) = (ack.opt_str("pk"), ack.opt_str("gsi2sk")) else {
        return;
    };
    let (pk, position) = (pk.to_owned(), position.to_owned());
    for step in placed.iter_mut() {
        if let Step::PutNew(item) = step {
            if item.opt_str("kind") == Some(crate::messages::KIND) {
                item.insert(counters::COUNTED_AS.into(), s(&pk));
                item.insert(counters::COUNTED_AT.into(), s(&position));
            }
        }
    }
}

/// The acknowledgement first (a refusal of step 0 is a repeat), then the lines, the inbox
/// line, the wallet and the review items.
fn steps(org: &OrgId, event: &SmsEvent, seen: &Seen, plan: &Plan, now: DateTime<Utc>) -> Vec<Step> {
    let outcome = match (plan.writes, plan.flags.is_empty()) {
        (false, _) => "repush",
        (true, true) => "stored",
        (true, false) => "review",
    };
    let ack = Ack {
        org: org.clone(),
        event: event.clone(),
        answer: plan.answer.clone(),
        outcome,
    };
    let mut steps = vec![Step::PutNew(ack.to_item())];
    steps.extend(plan.lines.iter().map(|l| Step::PutNew(l.to_item())));
    steps.extend(inbox_step(event, seen, &plan.inbox));
    if let Some(next) = &plan.wallet {
        steps.push(seen.wallet.step(org, next));
    }
    steps.extend(
        plan.flags
            .iter()
            .map(|f| Step::PutNew(review(org, event, f, now).to_item())),
    );
    steps
}

fn inbox_step(event: &SmsEvent, seen: &Seen, write: &InboxWrite) -> Option<Step> {
    let line = seen.inbox.as_ref();
    let held = |update: Update, status| {
        Update::when(update, Cond::Equals("status".into(), s(tag_name(&status))))
    };
    match (write, line) {
        (InboxWrite::Nothing, _) => None,
        (InboxWrite::New(new), _) => Some(Step::PutNew(new.to_item())),
        (InboxWrite::Move { to }, Some(line)) => Some(Step::Update {
            pk: line.pk(),
            update: held(
                Update::new()
                    .set("status", s(tag_name(to)))
                    .add("event_ids", event_set(&event.event_id)),
                line.status,
            ),
        }),
        (InboxWrite::Booked { status }, Some(line)) => {
            let mut update = Update::new()
                .set("sent_event", s(&event.event_id))
                .add("event_ids", event_set(&event.event_id));
            if let (Some(text), true) = (&event.text, line.text.is_empty()) {
                update = update.set("text", s(text));
            }
            if let Some(segments) = event.segments {
                update = update.set("segments", n(segments));
            }
            // Held to the status read and to no sent being booked meanwhile.
            let update = update.when(Cond::All(vec![
                Cond::Equals("status".into(), s(tag_name(status))),
                Cond::Lacks("sent_event".into()),
            ]));
            Some(Step::Update {
                pk: line.pk(),
                update,
            })
        }
        // A move or booking decided over a line that was read: unreachable without one.
        (InboxWrite::Move { .. } | InboxWrite::Booked { .. }, None) => None,
    }
}

/// One review item per event and reason: the event's key is new, so its review items are too.
fn review(org: &OrgId, event: &SmsEvent, flag: &Flag, now: DateTime<Utc>) -> ReviewItem {
    ReviewItem {
        org: org.clone(),
        kind: Kind::Sms,
        reason: flag.reason,
        key: event.key().to_string(),
        at: now,
        detail: flag.detail.clone(),
    }
}
