//! What a stored event causes: notifications, activity-log lines, automation triggers and bank
//! matches, as the values the stream fan-out publishes and the workers apply. Each carries its
//! own key, so a consequence applied twice is applied once. A domain says which consequences its
//! event has; `effects` publishes and applies them.

use crate::ids::{EventKey, OrgId};
use crate::store::item::{Builder, Read};
use crate::store::{Item, StoreError};
use crate::time::serde_millis;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Entities that carry an activity log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum EntityKind {
    Contact,
    Deal,
    Company,
}

/// Something rules can react to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
pub enum Trigger {
    #[serde(rename = "invoice.paid")]
    InvoicePaid,
    #[serde(rename = "message.received")]
    MessageReceived,
    #[serde(rename = "call.missed")]
    CallMissed,
    #[serde(rename = "lead.created")]
    LeadCreated,
    #[serde(rename = "credit_note.created")]
    CreditNoteCreated,
}

impl Trigger {
    pub const ALL: [Self; 5] = [
        Self::InvoicePaid,
        Self::MessageReceived,
        Self::CallMissed,
        Self::LeadCreated,
        Self::CreditNoteCreated,
    ];

    /// Whether what it fires for has a conversation a reply answers: a message's own, a missed
    /// call's contact's latest.
    pub fn answers_a_conversation(self) -> bool {
        matches!(self, Self::MessageReceived | Self::CallMissed)
    }
}

/// To `recipient`, or to every team member (one copy each, keyed `KEY#RECIPIENT`) when `None`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Notification {
    pub org: OrgId,
    pub key: EventKey,
    pub recipient: Option<String>,
    pub text: String,
    #[serde(with = "serde_millis")]
    pub at: DateTime<Utc>,
}

/// A line in the log of a contact, deal or company, appended once per key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ActivityLine {
    pub org: OrgId,
    pub entity_kind: EntityKind,
    pub entity_id: String,
    pub key: String,
    pub kind: String,
    pub text: String,
    #[serde(with = "serde_millis")]
    pub at: DateTime<Utc>,
    /// A payment's line: the money received, its currency and the payment's event key, to
    /// find lookalikes by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub money: Option<(String, String, String)>,
}

/// A trigger fired by an event; every rule for it runs once per (rule, event key).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fired {
    pub org: OrgId,
    pub trigger: Trigger,
    pub event_key: EventKey,
    #[serde(with = "serde_millis")]
    pub at: DateTime<Utc>,
    pub context: Value,
}

/// A credit row stored in a bank statement: matched to the invoice it names, once.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BankCredit {
    pub org: OrgId,
    pub tx_id: String,
    #[serde(with = "serde_millis")]
    pub at: DateTime<Utc>,
}

/// A payment booked on an invoice, to be held against the money that reached the same
/// invoice or the same contact in the week before it: a lookalike goes to a person
/// (`possible_same_money`), never merged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Lookalike {
    pub org: OrgId,
    pub event_key: EventKey,
    pub invoice_id: String,
    pub invoice_number: String,
    pub contact_id: Option<String>,
    /// The money received, as shown (`30.00`).
    pub amount: String,
    pub currency: String,
    #[serde(with = "serde_millis")]
    pub at: DateTime<Utc>,
}

/// A payment reversed: money it kept that a person put on an invoice is taken back too
/// (`effects::kept`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Unkeep {
    pub org: OrgId,
    /// The reversed payment's event key.
    pub reversed: EventKey,
    #[serde(with = "serde_millis")]
    pub at: DateTime<Utc>,
}

/// A person's decision to send an automation run's kept request once more. The operator's
/// view moves the run to `sending` under `lease`; the automation worker, which alone opens the
/// target's secret, takes the run from that lease, sends, and settles it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Resend {
    pub org: OrgId,
    pub rule_id: String,
    pub event_key: EventKey,
    /// The token of the lease the decision took; a copy of this message finds it gone.
    pub lease: String,
    #[serde(with = "serde_millis")]
    pub at: DateTime<Utc>,
}

/// An assistant's `reply` tool call: the automation worker, which alone opens the channel's
/// secret, sends `text` into the conversation once, as the run (`assistant`, `assistant:CALL_ID`).
/// The call stores it (`to_item`, with the call's record), and the stream hands it to the
/// fan-out, which queues it for the worker: what a call asked to send is never lost between its
/// answer and the queue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AssistedReply {
    pub org: OrgId,
    pub call_id: String,
    pub conversation_id: String,
    pub text: String,
    #[serde(with = "serde_millis")]
    pub at: DateTime<Utc>,
}

impl AssistedReply {
    /// The run's rule: every assistant reply is a run of the one `assistant` rule.
    pub const RULE: &'static str = "assistant";

    /// The run's event: the tool call.
    pub fn event_key(&self) -> EventKey {
        EventKey::new("assistant", &self.call_id)
    }

    /// Where the reply is stored: one item per organisation and call.
    pub fn pk(&self) -> String {
        let call = crate::ids::key_part(&self.call_id);
        self.org.pk(&format!("REPLY#{call}"))
    }

    /// The reply as stored for the stream (kept as long as a request's record).
    pub fn to_item(&self) -> Item {
        let reply = serde_json::to_string(self).expect("a reply serialises");
        Builder::new(&self.pk(), ASSISTED_KIND, self.org.as_str())
            .str("reply", reply)
            .time("at", self.at)
            .num(
                "expires_at",
                (self.at + crate::store::REQUEST_KEPT).timestamp(),
            )
            .build()
    }

    /// A stored reply, read back.
    pub fn from_item(item: &Item) -> Result<Self, StoreError> {
        serde_json::from_str(item.str_of("reply")?)
            .map_err(|e| crate::store::item::malformed(item, &e.to_string()))
    }
}

/// The kind of an assistant's reply stored to be sent (`AssistedReply::to_item`).
pub const ASSISTED_KIND: &str = "assisted_reply";

/// One consequence, as it travels through SQS: `{"type": "activity", ...}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Consequence {
    Notification(Notification),
    Activity(ActivityLine),
    Trigger(Fired),
    BankCredit(BankCredit),
    Lookalike(Lookalike),
    Unkeep(Unkeep),
    Resend(Resend),
    Assisted(AssistedReply),
}

/// A queue's messages: some of the consequences, each as the queue's own enum, to and from a
/// consequence (`(queue variant, consequence variant, its type)`).
macro_rules! queue_jobs {
    ($(#[$doc:meta])* $name:ident { $($variant:ident <- $consequence:ident($ty:ty)),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq)]
        pub enum $name {
            $($variant($ty)),*
        }

        impl TryFrom<Consequence> for $name {
            type Error = Consequence;
            fn try_from(c: Consequence) -> Result<Self, Consequence> {
                match c {
                    $(Consequence::$consequence(job) => Ok(Self::$variant(job)),)*
                    other => Err(other),
                }
            }
        }

        impl From<$name> for Consequence {
            fn from(job: $name) -> Self {
                match job {
                    $($name::$variant(job) => Self::$consequence(job),)*
                }
            }
        }
    };
}

queue_jobs! {
    /// The matching queue's messages: a credit row to match, a payment to hold against its
    /// lookalikes, a reversed payment's kept money to take back.
    Matched {
        BankCredit <- BankCredit(BankCredit),
        Lookalike <- Lookalike(Lookalike),
        Unkeep <- Unkeep(Unkeep),
    }
}

queue_jobs! {
    /// The automation queue's messages: a trigger's rules to run, a person's resend, or an
    /// assistant's reply.
    Automated {
        Fired <- Trigger(Fired),
        Resend <- Resend(Resend),
        Assisted <- Assisted(AssistedReply),
    }
}

queue_jobs! {
    /// What tells people: a notification, or a line in an activity log. The notifications
    /// queue's messages hold one event's, all in one message (`effects::job::Records`).
    Told {
        Notification <- Notification(Notification),
        Line <- Activity(ActivityLine),
    }
}

/// The queue a consequence goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QueueKind {
    /// Notifications and activity lines: what tells people, one message an event.
    Notifications,
    Automation,
    Matching,
}

impl Consequence {
    pub fn queue(&self) -> QueueKind {
        match self {
            Self::Notification(_) | Self::Activity(_) => QueueKind::Notifications,
            Self::Trigger(_) | Self::Resend(_) | Self::Assisted(_) => QueueKind::Automation,
            Self::BankCredit(_) | Self::Lookalike(_) | Self::Unkeep(_) => QueueKind::Matching,
        }
    }

    pub fn org(&self) -> &OrgId {
        match self {
            Self::Notification(n) => &n.org,
            Self::Activity(a) => &a.org,
            Self::Trigger(t) => &t.org,
            Self::BankCredit(c) => &c.org,
            Self::Lookalike(l) => &l.org,
            Self::Unkeep(u) => &u.org,
            Self::Resend(r) => &r.org,
            Self::Assisted(a) => &a.org,
        }
    }

    /// Whether the operator's view tracks it: it leaves an item when it happens (a
    /// notification's copies, an activity line, a trigger's handled mark), so an event that
    /// implies one waits until it is there (`effects::waiting`).
    pub fn is_tracked(&self) -> bool {
        matches!(
            self,
            Self::Notification(_) | Self::Activity(_) | Self::Trigger(_)
        )
    }

    /// Whether the fan-out writes it itself as it reads its event: a record under its own key
    /// (an activity line, a notification to one member), one conditional put, so the event
    /// waits on no queue for it. A team's notification (a copy a member, read from the team)
    /// and everything else goes to its queue.
    pub fn is_written_at_once(&self) -> bool {
        match self {
            Self::Activity(_) => true,
            Self::Notification(n) => n.recipient.is_some(),
            _ => false,
        }
    }

    /// Whether it is a notification to every member of a team (a copy each).
    pub fn is_for_team(&self) -> bool {
        matches!(self, Self::Notification(n) if n.recipient.is_none())
    }

    /// The consequence's own key, for logs and review items.
    pub fn key(&self) -> String {
        match self {
            Self::Notification(n) => format!("notification:{}", n.key),
            Self::Activity(a) => format!(
                "activity:{}:{}:{}",
                crate::store::item::tag_name(&a.entity_kind),
                a.entity_id,
                a.key
            ),
            Self::Trigger(t) => format!(
                "trigger:{}:{}",
                crate::store::item::tag_name(&t.trigger),
                t.event_key
            ),
            Self::BankCredit(c) => format!("match:{}", c.tx_id),
            Self::Lookalike(l) => format!("lookalike:{}", l.event_key),
            Self::Unkeep(u) => format!("unkeep:{}", u.reversed),
            Self::Resend(r) => format!("resend:{}:{}", r.rule_id, r.event_key),
            Self::Assisted(a) => format!("assistant:{}", a.call_id),
        }
    }
}

/// The keys of the consequences the operator's view tracks (`Consequence::is_tracked`): what a
/// waiting mark holds of them.
pub fn tracked_keys(consequences: &[Consequence]) -> Vec<String> {
    consequences
        .iter()
        .filter(|c| c.is_tracked())
        .map(Consequence::key)
        .collect()
}

macro_rules! job {
    ($variant:ident, $ty:ty) => {
        impl TryFrom<Consequence> for $ty {
            type Error = Consequence;
            fn try_from(c: Consequence) -> Result<Self, Consequence> {
                match c {
                    Consequence::$variant(job) => Ok(job),
                    other => Err(other),
                }
            }
        }

        impl From<$ty> for Consequence {
            fn from(job: $ty) -> Self {
                Consequence::$variant(job)
            }
        }
    };
}

job!(Notification, Notification);
job!(Activity, ActivityLine);
job!(Trigger, Fired);
job!(BankCredit, BankCredit);
job!(Lookalike, Lookalike);
job!(Unkeep, Unkeep);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_with_a_bad_org_kind_or_time_does_not_parse() {
        let good = r#"{"type":"activity","org":"o0123456789ab","entity_kind":"contact","entity_id":"c1","key":"k1","kind":"note","text":"hello","at":"2026-12-02T10:00:00.000Z"}"#;
        let parsed: Consequence = serde_json::from_str(good).unwrap();
        assert_eq!(parsed.key(), "activity:contact:c1:k1");
        for bad in [
            good.replace("o0123456789ab", "ORG#x"),
            good.replace("contact", "planet"),
            good.replace("2026-12-02T10:00:00.000Z", "yesterday"),
        ] {
            assert!(serde_json::from_str::<Consequence>(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn triggers_travel_by_their_dotted_names() {
        assert_eq!(
            serde_json::to_string(&Trigger::InvoicePaid).unwrap(),
            "\"invoice.paid\""
        );
    }
}
