//! Calls: a final call result, stored once under `call:CALL_ID:DIRECTION` (a softphone's and a SIP
//! provider's ids are the organisation's own; a generic signed sender's are unique only within its
//! integration: `call:INTEGRATION:CALL_ID:DIRECTION`), linked to a contact by
//! the peer's phone number (an unknown number becomes one lead). One `BatchGetItem` (eventually
//! consistent: every plan holds on it) reads the call's key and the peer's identity; a stored call is a duplicate answered from that
//! read alone. Otherwise one transaction puts the call under `attribute_not_exists` (and, for an
//! unknown number, the lead's identity and contact), so twenty copies at once store one call.

mod fields;
pub mod providers;
mod record;

pub use fields::{CallFields, Checked, FieldError};
pub use record::{list, page, record, recording, CallAnswer, Recorded};

use crate::consequences::{ActivityLine, Consequence, EntityKind, Fired, Notification, Trigger};
use crate::ids::{EventKey, ExternalId, OrgId};
use crate::store::item::{tag_name, Builder, Read};
use crate::store::lists::EventKind;
use crate::store::{Item, StoreError};
use crate::time;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// The stored item's `kind`: one of the event kinds the stream hands to the fan-out.
pub const KIND: &str = "call";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Inbound,
    Outbound,
}

/// A final call status (Twilio's names); the statuses before it are not calls yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CallStatus {
    Completed,
    Busy,
    Failed,
    NoAnswer,
    Canceled,
}

impl CallStatus {
    /// The final status named `raw`; `None` for a status before the end (`queued`, `ringing`,
    /// `in-progress`) or an unknown one.
    pub fn final_of(raw: &str) -> Option<Self> {
        crate::store::item::parse_tag(raw)
    }

    /// Statuses before the end of a call: answered "ignored", nothing written.
    pub const PENDING: [&'static str; 4] = ["initiated", "queued", "ringing", "in-progress"];
}

/// The longest call we store, in seconds (a day).
pub const MAX_DURATION: u32 = 86_400;

/// One final call result, parsed and checked at the edge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallInput {
    pub org: OrgId,
    pub call_id: ExternalId,
    pub direction: Direction,
    /// The other party, E.164.
    pub peer: String,
    pub status: CallStatus,
    pub duration: u32,
    pub at: DateTime<Utc>,
    /// `softphone`, or the integration that posted it.
    pub source: String,
    /// The integration whose ids these are, for a sender whose call ids are unique only within
    /// it (a generic Standard Webhooks sender); `None` where they are the organisation's.
    pub scope: Option<String>,
}

impl CallInput {
    pub fn key(&self) -> EventKey {
        let scope = self
            .scope
            .as_ref()
            .map(|s| format!("{s}:"))
            .unwrap_or_default();
        EventKey::new(
            KIND,
            &format!("{scope}{}:{}", self.call_id, tag_name(&self.direction)),
        )
    }

    fn pk(&self) -> String {
        call_pk(
            &self.org,
            self.scope.as_deref(),
            &self.call_id,
            self.direction,
        )
    }

    /// What the call says: the same key with another status or duration is another report.
    pub fn fingerprint(&self) -> String {
        let canonical = format!("{}|{}|{}", tag_name(&self.status), self.duration, self.peer);
        hex::encode(Sha256::digest(canonical))[..32].to_owned()
    }

    /// Inbound and not answered.
    pub fn missed(&self) -> bool {
        self.direction == Direction::Inbound
            && matches!(
                self.status,
                CallStatus::NoAnswer | CallStatus::Busy | CallStatus::Canceled
            )
    }
}

fn call_pk(org: &OrgId, scope: Option<&str>, call_id: &ExternalId, direction: Direction) -> String {
    let scope = scope
        .map(|s| format!("{}#", crate::ids::key_part(s)))
        .unwrap_or_default();
    org.pk(&format!(
        "CALL#{scope}{}#{}",
        crate::ids::key_part(call_id.as_str()),
        tag_name(&direction)
    ))
}

/// A call as every answer shows it: the type the answers are made of and the OpenAPI document
/// describes (`Call`).
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Call)]
pub struct CallView {
    #[schema(example = "call:CA42:inbound")]
    pub key: String,
    pub call_id: String,
    pub direction: Direction,
    #[schema(example = "+380441234567")]
    pub peer: String,
    pub status: CallStatus,
    /// Seconds.
    pub duration: u32,
    /// Inbound and `no-answer`, `busy` or `canceled`.
    pub missed: bool,
    /// The contact the peer's number belongs to (a new lead when it was unknown).
    pub contact_id: String,
    #[schema(format = DateTime)]
    pub at: String,
}

/// A stored call: the item the stream hands to the fan-out, read back through this type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    pub input: CallInput,
    pub contact_id: String,
    /// The contact's owner when the call was stored: who hears of a missed call.
    pub owner: Option<String>,
    pub fingerprint: String,
}

impl Call {
    pub fn key(&self) -> EventKey {
        self.input.key()
    }

    pub fn to_item(&self) -> Item {
        let i = &self.input;
        Builder::new(&i.pk(), KIND, i.org.as_str())
            .str("key", self.key().as_str())
            .str("call_id", i.call_id.as_str())
            .tag("direction", &i.direction)
            .str("peer", &i.peer)
            .tag("status", &i.status)
            .num("duration", i.duration)
            .bool("missed", i.missed())
            .str("contact_id", &self.contact_id)
            .opt_str("owner", self.owner.clone())
            .str("source", &i.source)
            .opt_str("scope", i.scope.clone())
            .str("fingerprint", &self.fingerprint)
            .time("at", i.at)
            .list(
                &i.org.pk("CALLS"),
                &format!("{}#{}", time::format(i.at), self.key()),
            )
            .on_events(&i.org, EventKind::Call, (i.at, self.key().as_str()))
            .build()
    }

    pub fn from_item(item: &Item) -> Result<Self, StoreError> {
        let bad = |detail: String| StoreError::Malformed {
            pk: item.opt_str("pk").unwrap_or_default().to_owned(),
            detail,
        };
        let org = OrgId::parse(item.str_of("org")?).map_err(|e| bad(e.to_string()))?;
        let call_id = ExternalId::parse("call_id", item.str_of("call_id")?)
            .map_err(|e| bad(e.to_string()))?;
        let duration = u32::try_from(item.u64_of("duration")?)
            .map_err(|_| bad("duration out of range".into()))?;
        Ok(Self {
            input: CallInput {
                org,
                call_id,
                direction: item.tag_of("direction")?,
                peer: item.str_of("peer")?.to_owned(),
                status: item.tag_of("status")?,
                duration,
                at: item.time_of("at")?,
                source: item.str_of("source")?.to_owned(),
                scope: item.opt_str("scope").map(str::to_owned),
            },
            contact_id: item.str_of("contact_id")?.to_owned(),
            owner: item.opt_str("owner").map(str::to_owned),
            fingerprint: item.str_of("fingerprint")?.to_owned(),
        })
    }

    /// The call as the API and the webhook answer it.
    pub fn view(&self) -> CallView {
        let i = &self.input;
        CallView {
            key: self.key().as_str().to_owned(),
            call_id: i.call_id.as_str().to_owned(),
            direction: i.direction,
            peer: i.peer.clone(),
            status: i.status,
            duration: i.duration,
            missed: i.missed(),
            contact_id: self.contact_id.clone(),
            at: time::format(i.at),
        }
    }

    pub fn to_json(&self) -> Value {
        serde_json::to_value(self.view()).expect("a call's view serialises")
    }

    /// An activity line on the contact; for a missed call also a notification (the contact's
    /// owner, or the team) and `call.missed`.
    pub fn consequences(&self) -> Vec<Consequence> {
        let i = &self.input;
        let text = match (i.missed(), i.direction) {
            (true, _) => format!("Missed call from {} ({})", i.peer, tag_name(&i.status)),
            (false, Direction::Inbound) => format!("Call from {}: {} s", i.peer, i.duration),
            (false, Direction::Outbound) => {
                format!(
                    "Call to {}: {}, {} s",
                    i.peer,
                    tag_name(&i.status),
                    i.duration
                )
            }
        };
        let mut out = vec![ActivityLine {
            org: i.org.clone(),
            entity_kind: EntityKind::Contact,
            entity_id: self.contact_id.clone(),
            key: self.key().to_string(),
            kind: "call".into(),
            text: text.clone(),
            at: i.at,
            money: None,
        }
        .into()];
        if i.missed() {
            out.push(
                Notification {
                    org: i.org.clone(),
                    key: self.key(),
                    recipient: self.owner.clone(),
                    text,
                    at: i.at,
                }
                .into(),
            );
            out.push(
                Fired {
                    org: i.org.clone(),
                    trigger: Trigger::CallMissed,
                    event_key: self.key(),
                    at: i.at,
                    context: json!({"call_id": i.call_id.as_str(), "peer": i.peer, "contact_id": self.contact_id}),
                }
                .into(),
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::fields::sample::{check, fields};
    use super::*;

    #[test]
    fn the_key_is_call_id_and_direction() {
        let Ok(Checked::Call(c)) = check(&fields("completed", "outbound")) else {
            panic!("a call");
        };
        assert_eq!(c.key().as_str(), "call:CA1:outbound");
    }

    #[test]
    fn a_scoped_call_is_keyed_within_its_integration() {
        let Ok(Checked::Call(mut c)) = check(&fields("completed", "outbound")) else {
            panic!("a call");
        };
        let org_wide = (c.key(), c.pk());
        c.scope = Some("o0123456789ab_00ff".into());
        assert_eq!(c.key().as_str(), "call:o0123456789ab_00ff:CA1:outbound");
        assert_ne!(c.pk(), org_wide.1);
        assert_ne!(c.key(), org_wide.0);
    }

    #[test]
    fn a_stored_call_reads_back_as_itself() {
        let Ok(Checked::Call(input)) = check(&fields("no-answer", "inbound")) else {
            panic!("a call");
        };
        let mut scoped = input.clone();
        scoped.scope = Some("o0123456789ab_00ff".into());
        for input in [input, scoped] {
            let call = Call {
                fingerprint: input.fingerprint(),
                input,
                contact_id: "ct_1".into(),
                owner: None,
            };
            assert_eq!(Call::from_item(&call.to_item()).unwrap(), call);
        }
        let Ok(Checked::Call(input)) = check(&fields("no-answer", "inbound")) else {
            panic!("a call");
        };
        let call = Call {
            fingerprint: input.fingerprint(),
            input,
            contact_id: "ct_1".into(),
            owner: Some("u1".into()),
        };
        assert_eq!(Call::from_item(&call.to_item()).unwrap(), call);
        let kinds: Vec<String> = call.consequences().iter().map(Consequence::key).collect();
        assert_eq!(
            kinds,
            [
                "activity:contact:ct_1:call:CA1:inbound",
                "notification:call:CA1:inbound",
                "trigger:call.missed:call:CA1:inbound"
            ]
        );
    }
}
