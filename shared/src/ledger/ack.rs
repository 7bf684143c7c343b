//! An SMS event's acknowledgement: stored under its event id with the answer it got, so a repeat
//! of the id is answered from one read; a repeat with another payload is a conflict.

use super::{LedgerError, SmsEvent};
use crate::ids::{key_part, OrgId};
use crate::store::item::{tag_name, Builder, Read};
use crate::store::lists::EventKind;
use crate::store::{Answer, Item, Mismatch, Written};
use serde_json::Value;

/// The stored acknowledgement's item kind.
pub const ACK_KIND: &str = "sms_event";

/// How recording an event ended: stored now (a re-push of its message as a repeat), or the
/// acknowledgement stored under its event id.
pub type Recorded = Written<Acked>;

/// An event's answer, stored with its acknowledgement and replayed on every repeat.
#[derive(Clone, Debug, PartialEq)]
pub struct Acked {
    pub answer: Value,
    /// Whether the event filed review items.
    pub review: bool,
    pub fingerprint: String,
}

impl Answer for Acked {
    fn answer(&self) -> Value {
        self.answer.clone()
    }

    fn review(&self) -> bool {
        self.review
    }
}

/// The stored acknowledgement of one event id: what it was, and the answer it got.
#[derive(Clone, Debug)]
pub struct Ack {
    pub org: OrgId,
    pub event: SmsEvent,
    pub answer: Value,
    pub outcome: &'static str,
}

pub fn ack_pk(org: &OrgId, integration_id: &str, event_id: &str) -> String {
    org.pk(&format!(
        "SMS_EVENT#{integration_id}#{}",
        key_part(event_id)
    ))
}

impl Ack {
    pub fn to_item(&self) -> Item {
        let e = &self.event;
        let builder = Builder::new(
            &ack_pk(&self.org, &e.integration_id, &e.event_id),
            ACK_KIND,
            self.org.as_str(),
        )
        .str("key", e.key().as_str())
        .str("event_id", &e.event_id)
        .str("integration_id", &e.integration_id)
        .str("message_id", &e.message_id)
        .tag("type", &e.kind)
        .str("fingerprint", &e.fingerprint)
        // What the carrier priced it at, for the operator's row.
        .opt_str(
            "price",
            e.price
                .as_ref()
                .map(|p| format!("{} {}", p.currency.show(p.amount), p.currency.as_str())),
        )
        .str("answer", self.answer.to_string())
        .str("outcome", self.outcome)
        .time("at", e.at);
        // A re-push stored nothing but its acknowledgement: the operator counts it among the
        // duplicates, not the events.
        match self.outcome {
            "repush" => builder,
            _ => builder.on_events(&self.org, EventKind::Sms, (e.at, e.key().as_str())),
        }
        .build()
    }
}

/// The stored answer of an acknowledgement item, met again by `event`.
pub(super) fn replayed(item: &Item, event: &SmsEvent) -> Result<Recorded, LedgerError> {
    let answer: Value = serde_json::from_str(item.str_of("answer")?)
        .map_err(|_| crate::store::item::malformed(item, "answer"))?;
    let stored = Acked {
        answer,
        review: item.opt_str("outcome") == Some("review"),
        fingerprint: item.str_of("fingerprint")?.to_owned(),
    };
    let mismatch = Mismatch::of(
        &stored.fingerprint,
        &event.fingerprint,
        &[
            (
                "message_id",
                item.opt_str("message_id") != Some(&event.message_id),
            ),
            (
                "type",
                item.opt_str("type") != Some(tag_name(&event.kind).as_str()),
            ),
        ],
    );
    Ok(Written::again(stored, mismatch))
}
