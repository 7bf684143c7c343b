//! What one carrier event does, given what is stored for its message: a pure decision, turned
//! into one transaction by `record`. The event's own acknowledgement was not found (a stored one
//! is answered before anything is decided).
//!
//! - `sms.sent` books the debit once per message and records its event on the outgoing line;
//!   over a line a failure made first it also books the refund, so a failed message costs nothing.
//! - `sms.received` makes the incoming line (and its conversation message), with a debit when
//!   the carrier prices inbound.
//! - `sms.delivered` / `sms.failed` move the outgoing line from `sent` only; the first final status
//!   wins, a contradicting one files a review item, and a failure that wins refunds the debit.
//! - Anything that finds its line already written is a re-push: nothing changes, and the answer
//!   names the lines already there, marked duplicate.

use super::inbox::{inbox_id, inbox_pk};
use super::line::{ledger_id, message_line_pk};
use super::{InboxLine, InboxStatus, LedgerLine, LineKind, Price, SmsEvent, SmsType, Wallet};
use crate::ids::OrgId;
use crate::review::Reason;
use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde_json::{json, Value};

/// What the read found for the event's message.
#[derive(Clone, Debug, Default)]
pub struct Seen {
    pub wallet: Wallet,
    pub debit: Option<LedgerLine>,
    pub refund: Option<LedgerLine>,
    /// The line of the event's direction.
    pub inbox: Option<InboxLine>,
}

/// How the event writes its inbox line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InboxWrite {
    Nothing,
    New(Box<InboxLine>),
    /// An outgoing line moves from `sent` to a final status, recording the event.
    Move {
        to: InboxStatus,
    },
    /// `sms.sent` books a line a status event made first: the event is recorded, the status
    /// (held to what was read) stays.
    Booked {
        status: InboxStatus,
    },
}

/// Something a person must look at, filed with the event.
#[derive(Clone, Debug, PartialEq)]
pub struct Flag {
    pub reason: Reason,
    pub detail: Value,
}

#[derive(Clone, Debug)]
pub struct Plan {
    pub lines: Vec<LedgerLine>,
    pub inbox: InboxWrite,
    /// The wallet after the event, when it moved.
    pub wallet: Option<Wallet>,
    pub flags: Vec<Flag>,
    /// The incoming message is also placed in its conversation.
    pub message: bool,
    /// The answer, stored with the event and replayed on every repeat.
    pub answer: Value,
    /// Whether the event writes anything beyond its acknowledgement (a line, its inbox line, a
    /// review item): one that does not is a re-push.
    pub writes: bool,
}

/// The decision for `event` of `org` over what was `seen`, at `now`.
pub fn decide(event: &SmsEvent, org: &OrgId, seen: &Seen, now: DateTime<Utc>) -> Plan {
    let pk = inbox_pk(
        org,
        &event.integration_id,
        &event.message_id,
        event.kind.direction(),
    );
    let mut draft = Draft {
        event,
        org,
        now,
        inbox_id: inbox_id(&pk),
        wallet: seen.wallet,
        lines: Vec::new(),
        flags: Vec::new(),
    };
    let (inbox, status) = match (event.kind, &seen.inbox) {
        (SmsType::Sent, Some(line)) if line.sent_event.is_some() || seen.debit.is_some() => {
            return repush(org, event, seen, line)
        }
        (SmsType::Received, Some(line)) => return repush(org, event, seen, line),
        (SmsType::Delivered | SmsType::Failed, Some(line))
            if line.status == final_status(event.kind) =>
        {
            return repush(org, event, seen, line)
        }
        (SmsType::Sent, line) => draft.sent(line.as_ref()),
        (SmsType::Received, None) => {
            draft.charge(LineKind::Debit);
            (
                InboxWrite::New(Box::new(draft.line(InboxStatus::Received))),
                InboxStatus::Received,
            )
        }
        (SmsType::Delivered | SmsType::Failed, None) => {
            let status = final_status(event.kind);
            (InboxWrite::New(Box::new(draft.line(status))), status)
        }
        (SmsType::Delivered | SmsType::Failed, Some(line)) => draft.settled(line, seen),
    };
    draft.finish(seen, inbox, status)
}

fn final_status(kind: SmsType) -> InboxStatus {
    match kind {
        SmsType::Failed => InboxStatus::Failed,
        _ => InboxStatus::Delivered,
    }
}

/// The line a message is charged on, as an answer names it: its refund, else its debit.
fn latest(seen: &Seen) -> Option<&str> {
    seen.refund
        .as_ref()
        .or(seen.debit.as_ref())
        .map(|l| l.ledger_id.as_str())
}

/// The same message under a new event id: nothing changes; the answer names what is there.
/// A report that says otherwise than what is stored (another price for a booked sent, another
/// text for a received message) is a person's matter: a `payload_mismatch` review item, and the
/// first kept.
fn repush(org: &OrgId, event: &SmsEvent, seen: &Seen, line: &InboxLine) -> Plan {
    let flags: Vec<Flag> = contradiction(event, seen, line).into_iter().collect();
    let mut answer = answer(
        org,
        event,
        latest(seen),
        &line.inbox_id,
        &seen.wallet,
        line.status,
        true,
    );
    if !flags.is_empty() {
        answer.review = Some(flags.iter().map(|f| f.reason).collect());
    }
    Plan {
        lines: Vec::new(),
        inbox: InboxWrite::Nothing,
        wallet: None,
        writes: !flags.is_empty(),
        flags,
        message: false,
        answer: answer.to_json(),
    }
}

/// What a re-pushed report of a message says otherwise than what is stored of it.
fn contradiction(event: &SmsEvent, seen: &Seen, line: &InboxLine) -> Option<Flag> {
    let shown = |p: &Price| p.currency.show(p.amount);
    let (field, first, now) = match (event.kind, &seen.debit, &event.price) {
        (SmsType::Sent, Some(debit), price)
            if price.is_some_and(|p| (debit.amount, debit.currency) != (p.amount, p.currency))
                || (price.is_none() && event.free) =>
        {
            let first = Price {
                amount: debit.amount,
                currency: debit.currency,
            };
            let first = json!({"price": shown(&first), "currency": first.currency.as_str(), "event_id": debit.event_id});
            // Priced 0 now: free, where the first was charged.
            let now = match price {
                Some(p) => json!({"price": shown(p), "currency": p.currency.as_str()}),
                None => json!({"price": "0"}),
            };
            ("price", first, now)
        }
        (SmsType::Received, ..) => match &event.text {
            Some(text) if !line.text.is_empty() && *text != line.text => {
                ("text", json!({"text": line.text}), json!({"text": text}))
            }
            _ => return None,
        },
        _ => return None,
    };
    Some(Flag {
        reason: Reason::PayloadMismatch,
        detail: json!({"message_id": event.message_id, "event_id": event.event_id,
            "fields": [field], "stored": first, "received": now}),
    })
}

fn answer(
    org: &OrgId,
    event: &SmsEvent,
    ledger_id: Option<&str>,
    inbox_id: &str,
    wallet: &Wallet,
    status: InboxStatus,
    duplicate: bool,
) -> SmsAnswer {
    SmsAnswer {
        ack: event.event_id.clone(),
        duplicate,
        held: None,
        ledger_id: ledger_id.map(str::to_owned),
        inbox_id: Some(inbox_id.to_owned()),
        balance: wallet.shown_balance(),
        message_id: event.message_id.clone(),
        kind: event.kind,
        status: Some(status),
        conversation_id: (event.kind == SmsType::Received)
            .then(|| crate::messages::conversation_id(org, &event.integration_id, &event.from)),
        review: None,
    }
}

/// The answer to a carrier event, stored with it: a repeat of the event id gets it again, and
/// a re-push of the message under a new event id names the same lines; both `duplicate: true`.
#[derive(Clone, Debug, serde::Serialize, utoipa::ToSchema)]
pub struct SmsAnswer {
    /// The event id (`webhook-id`).
    pub ack: String,
    pub duplicate: bool,
    /// True when the integration is paused: the event is kept, and decided on its resume.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held: Option<bool>,
    /// The line the message is charged on (its refund, else its debit); null when none.
    pub ledger_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inbox_id: Option<String>,
    /// The wallet's balance after the event.
    pub balance: String,
    pub message_id: String,
    #[serde(rename = "type")]
    #[schema(value_type = String, example = "sms.sent")]
    pub kind: SmsType,
    /// The inbox line's status after the event.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<InboxStatus>,
    /// `sms.received`: the conversation the message is in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    /// Review items filed: `negative_balance`, `currency_mismatch`, `missing_price`,
    /// `status_conflict`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<String>>)]
    pub review: Option<Vec<Reason>>,
}

impl SmsAnswer {
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("an SMS answer serialises")
    }
}

/// The lines and flags of a new event, the wallet moving as each line is booked.
struct Draft<'a> {
    event: &'a SmsEvent,
    org: &'a OrgId,
    now: DateTime<Utc>,
    inbox_id: String,
    wallet: Wallet,
    lines: Vec<LedgerLine>,
    flags: Vec<Flag>,
}

impl Draft<'_> {
    /// `sms.sent` over the line a status event may have made first: the debit, and its refund
    /// when a failure came first.
    fn sent(&mut self, line: Option<&InboxLine>) -> (InboxWrite, InboxStatus) {
        let status = line.map_or(InboxStatus::Sent, |l| l.status);
        self.charge(LineKind::Debit);
        if status == InboxStatus::Failed {
            self.refund(self.lines.first().cloned());
        }
        let write = match line {
            Some(_) => InboxWrite::Booked { status },
            None => InboxWrite::New(Box::new(self.line(InboxStatus::Sent))),
        };
        (write, status)
    }

    /// A final status over a line in another status: the first final status wins (another is a
    /// review item), and a failure that wins refunds the debit.
    fn settled(&mut self, line: &InboxLine, seen: &Seen) -> (InboxWrite, InboxStatus) {
        let (event, status) = (self.event, final_status(self.event.kind));
        if line.status.is_final() {
            self.flags.push(Flag {
                reason: Reason::StatusConflict,
                detail: json!({"message_id": event.message_id, "status": line.status, "reported": status, "event_id": event.event_id}),
            });
            return (InboxWrite::Nothing, line.status);
        }
        if status == InboxStatus::Failed && seen.refund.is_none() {
            self.refund(seen.debit.clone());
        }
        (InboxWrite::Move { to: status }, status)
    }

    /// One review item per reason and event: a second of the same reason (a refund in another
    /// currency beside its debit) is the same matter, already filed.
    fn flag(&mut self, flag: Flag) {
        if !self.flags.iter().any(|f| f.reason == flag.reason) {
            self.flags.push(flag);
        }
    }

    /// The event's price as a debit; an unpriced `sms.sent` is left to a person (one the
    /// carrier priced 0 is free, nobody's matter).
    fn charge(&mut self, kind: LineKind) {
        match self.event.price {
            Some(price) => self.book(kind, price),
            None if self.event.kind == SmsType::Sent && !self.event.free => self.flag(Flag {
                reason: Reason::MissingPrice,
                detail: json!({"message_id": self.event.message_id, "event_id": self.event.event_id}),
            }),
            None => {}
        }
    }

    /// Gives back what `debit` took (nothing when there is none).
    fn refund(&mut self, debit: Option<LedgerLine>) {
        if let Some(debit) = debit {
            let price = Price {
                amount: debit.amount,
                currency: debit.currency,
            };
            self.book(LineKind::Refund, price);
        }
    }

    fn book(&mut self, kind: LineKind, price: Price) {
        let applied = self.wallet.takes(price.currency);
        if applied {
            let delta = kind.signed(price.amount);
            self.wallet = Wallet {
                balance: self.wallet.balance + delta,
                currency: Some(price.currency),
                version: self.wallet.version,
            };
        }
        let e = self.event;
        let direction = e.kind.direction();
        let pk = message_line_pk(self.org, &e.integration_id, &e.message_id, direction, kind);
        let line = LedgerLine {
            org: self.org.clone(),
            ledger_id: ledger_id(&pk),
            kind,
            amount: price.amount,
            currency: price.currency,
            event_id: self.event.event_id.clone(),
            integration_id: Some(self.event.integration_id.clone()),
            message_id: Some(self.event.message_id.clone()),
            direction: Some(direction),
            inbox_id: Some(self.inbox_id.clone()),
            at: self.now,
            applied,
            balance_after: self.wallet.balance,
        };
        if !applied {
            self.flag(Flag {
                reason: Reason::CurrencyMismatch,
                detail: json!({"ledger_id": line.ledger_id, "message_id": self.event.message_id, "currency": price.currency.as_str(), "wallet_currency": self.wallet.currency.map(|c| c.as_str())}),
            });
        }
        self.lines.push(line);
    }

    /// A debit that leaves the wallet below zero is a person's matter, judged on the wallet the
    /// whole event leaves: a `sms.sent` after its failure books its debit and its refund, which
    /// cost nothing together, and is no one's matter however low the wallet is.
    fn below_zero(&mut self) {
        let taken: Decimal = self
            .lines
            .iter()
            .filter(|l| l.applied)
            .map(|l| l.kind.signed(l.amount))
            .sum();
        let debit = self
            .lines
            .iter()
            .find(|l| l.applied && l.kind == LineKind::Debit);
        if let (Some(debit), true) = (debit, taken.is_sign_negative()) {
            if self.wallet.balance.is_sign_negative() {
                let detail = json!({"ledger_id": debit.ledger_id, "message_id": self.event.message_id, "balance": self.wallet.shown_balance()});
                self.flag(Flag {
                    reason: Reason::NegativeBalance,
                    detail,
                });
            }
        }
    }

    /// The line this event makes, in `status`.
    fn line(&self, status: InboxStatus) -> InboxLine {
        let e = self.event;
        InboxLine {
            org: self.org.clone(),
            inbox_id: self.inbox_id.clone(),
            integration_id: e.integration_id.clone(),
            message_id: e.message_id.clone(),
            direction: e.kind.direction(),
            from: e.from.clone(),
            to: e.to.clone(),
            text: e.text.clone().unwrap_or_default(),
            segments: e.segments,
            status,
            event_ids: vec![e.event_id.clone()],
            sent_event: (e.kind == SmsType::Sent).then(|| e.event_id.clone()),
            at: e.at,
        }
    }

    fn finish(mut self, seen: &Seen, inbox: InboxWrite, status: InboxStatus) -> Plan {
        self.below_zero();
        let moved = self.lines.iter().any(|l| l.applied);
        let wallet = moved.then(|| Wallet {
            version: seen.wallet.version + 1,
            ..self.wallet
        });
        let ledger_id = self
            .lines
            .last()
            .map(|l| l.ledger_id.as_str())
            .or(latest(seen));
        let mut answer = answer(
            self.org,
            self.event,
            ledger_id,
            &self.inbox_id,
            &self.wallet,
            status,
            false,
        );
        if !self.flags.is_empty() {
            answer.review = Some(self.flags.iter().map(|f| f.reason).collect());
        }
        let answer = answer.to_json();
        let writes =
            !self.lines.is_empty() || inbox != InboxWrite::Nothing || !self.flags.is_empty();
        Plan {
            message: self.event.kind == SmsType::Received,
            lines: self.lines,
            inbox,
            wallet,
            flags: self.flags,
            answer,
            writes,
        }
    }
}

#[cfg(test)]
mod tests;
