//! Calls: a final call result, stored once under `call:CALL_ID:DIRECTION`, linked to a contact by
//! the peer's phone number (an unknown number becomes one lead). One consistent `BatchGetItem`
//! reads the call's key and the peer's identity; a stored call is a duplicate answered from that
//! read alone. Otherwise one transaction puts the call under `attribute_not_exists` (and, for an
//! unknown number, the lead's identity and contact), so twenty copies at once store one call.

pub mod providers;

use crate::contacts::{self, Identity};
use crate::effects::{ActivityLine, Consequence, EntityKind, Fired, Notification, Trigger};
use crate::ids::{EventKey, ExternalId, OrgId};
use crate::review::ReviewItem;
use crate::store::item::{tag_name, Builder, Read};
use crate::store::{Item, Step, Store, StoreError, Transacted};
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
}

impl CallInput {
    pub fn key(&self) -> EventKey {
        EventKey::new(
            KIND,
            &format!("{}:{}", self.call_id, tag_name(&self.direction)),
        )
    }

    fn pk(&self) -> String {
        call_pk(&self.org, &self.call_id, self.direction)
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

fn call_pk(org: &OrgId, call_id: &ExternalId, direction: Direction) -> String {
    org.pk(&format!(
        "CALL#{}#{}",
        crate::ids::key_part(call_id.as_str()),
        tag_name(&direction)
    ))
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
            .str("fingerprint", &self.fingerprint)
            .time("at", i.at)
            .list(
                &i.org.pk("CALLS"),
                &format!("{}#{}", time::format(i.at), self.key()),
            )
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
            },
            contact_id: item.str_of("contact_id")?.to_owned(),
            owner: item.opt_str("owner").map(str::to_owned),
            fingerprint: item.str_of("fingerprint")?.to_owned(),
        })
    }

    /// The call as the API and the webhook answer it.
    pub fn to_json(&self) -> Value {
        let i = &self.input;
        json!({
            "key": self.key(),
            "call_id": i.call_id.as_str(),
            "direction": i.direction,
            "peer": i.peer,
            "status": i.status,
            "duration": i.duration,
            "missed": i.missed(),
            "contact_id": self.contact_id,
            "at": time::format(i.at),
        })
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

/// How recording a call ended.
#[derive(Clone, Debug)]
pub enum Recorded {
    New(Call),
    /// The key was stored before; `same_payload` says whether this report says the same.
    Duplicate {
        stored: Call,
        same_payload: bool,
    },
}

impl Recorded {
    pub fn call(&self) -> &Call {
        match self {
            Self::New(call) | Self::Duplicate { stored: call, .. } => call,
        }
    }

    /// `{"duplicate", "call"}`: the stored call on a repeat.
    pub fn answer(&self) -> Value {
        json!({
            "duplicate": matches!(self, Self::Duplicate { .. }),
            "call": self.call().to_json(),
        })
    }
}

/// Attempts before giving up on contention (a lead made concurrently is read on the next one).
const ATTEMPTS: u32 = 8;

/// Stores a call once; a report with the same key and another payload keeps the first and files
/// a `payload_mismatch` review item.
pub async fn record(store: &Store, input: &CallInput) -> Result<Recorded, StoreError> {
    let identity = Identity::phone(&input.peer);
    let identity_pk = contacts::identity_pk(&input.org, &identity);
    for attempt in 0..ATTEMPTS {
        let mut found = store
            .get_many(&[input.pk(), identity_pk.clone()])
            .await?
            .into_iter();
        let (stored, known) = (found.next().flatten(), found.next().flatten());
        if let Some(item) = stored {
            return duplicate(store, input, &item).await;
        }
        let (known, mut steps) = match known {
            Some(item) => (contacts::known(&item)?, Vec::new()),
            None => contacts::lead_steps(&input.org, &identity, &input.peer, input.at),
        };
        let call = Call {
            input: input.clone(),
            contact_id: known.contact_id.clone(),
            owner: known.owner.clone(),
            fingerprint: input.fingerprint(),
        };
        steps.insert(0, Step::PutNew(call.to_item()));
        match store.transact(steps).await? {
            Transacted::Done => return Ok(Recorded::New(call)),
            Transacted::Refused {
                step: 0,
                existing: Some(item),
            } => return duplicate(store, input, &item).await,
            // The lead was made by a concurrent arrival, or the items were contended: read again.
            _ => tokio::time::sleep(crate::payments::register::backoff(attempt)).await,
        }
    }
    Err(StoreError::Contended { pk: input.pk() })
}

async fn duplicate(store: &Store, input: &CallInput, item: &Item) -> Result<Recorded, StoreError> {
    let stored = Call::from_item(item)?;
    let same_payload = stored.fingerprint == input.fingerprint();
    if !same_payload {
        ReviewItem {
            org: input.org.clone(),
            kind: "call".into(),
            reason: "payload_mismatch".into(),
            key: format!("{}:{}", input.key(), &input.fingerprint()[..16]),
            at: input.at,
            detail: json!({
                "stored": {"status": stored.input.status, "duration": stored.input.duration, "peer": stored.input.peer},
                "received": {"status": input.status, "duration": input.duration, "peer": input.peer},
            }),
        }
        .put(store)
        .await?;
    }
    Ok(Recorded::Duplicate {
        stored,
        same_payload,
    })
}

/// The organisation's calls, newest first.
pub async fn list(store: &Store, org: &OrgId) -> Result<Vec<Call>, StoreError> {
    store
        .list(&org.pk("CALLS"), true, 200)
        .await?
        .iter()
        .map(Call::from_item)
        .collect()
}

/// What the caller's fields say, held to their limits: the body of `POST /api/calls` and of a
/// generic provider's `data`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CallFields {
    pub call_id: String,
    /// `inbound` or `outbound`.
    pub direction: String,
    /// E.164.
    pub peer: String,
    /// `completed`, `busy`, `failed`, `no-answer`, `canceled` (and, ignored: `queued`, `ringing`,
    /// `in-progress`).
    pub status: String,
    /// Seconds, 0 to 86400.
    #[serde(default)]
    pub duration: u32,
}

/// A refused call field: the field and why.
pub type FieldError = crate::fields::FieldError;

/// What the fields make: a call, or a status that is not a call yet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Checked {
    Call(CallInput),
    Pending(String),
}

impl CallFields {
    pub fn check(
        &self,
        org: &OrgId,
        source: &str,
        at: DateTime<Utc>,
    ) -> Result<Checked, FieldError> {
        let refuse = |field: &'static str, reason: &str| FieldError {
            field,
            reason: reason.into(),
        };
        // The status first: a call that has not ended is not a call yet, whatever else it says
        // (a ringing call from `anonymous` is ignored, not refused).
        let status = match CallStatus::final_of(&self.status) {
            Some(status) => status,
            None if CallStatus::PENDING.contains(&self.status.as_str()) => {
                return Ok(Checked::Pending(self.status.clone()))
            }
            None => {
                return Err(refuse(
                    "status",
                    "must be completed, busy, failed, no-answer or canceled (initiated, queued, ringing and in-progress are not calls yet)",
                ))
            }
        };
        let call_id =
            ExternalId::parse("call_id", &self.call_id).map_err(|e| refuse("call_id", e.reason))?;
        let direction = crate::store::item::parse_tag::<Direction>(&self.direction)
            .ok_or_else(|| refuse("direction", "must be inbound or outbound"))?;
        let peer = contacts::e164("peer", &self.peer)?;
        if self.duration > MAX_DURATION {
            return Err(refuse("duration", "must be 0 to 86400 seconds"));
        }
        Ok(Checked::Call(CallInput {
            org: org.clone(),
            call_id,
            direction,
            peer,
            status,
            duration: self.duration,
            at,
            source: source.to_owned(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(status: &str, direction: &str) -> CallFields {
        CallFields {
            call_id: "CA1".into(),
            direction: direction.into(),
            peer: "+380441234567".into(),
            status: status.into(),
            duration: 0,
        }
    }

    fn check(f: &CallFields) -> Result<Checked, FieldError> {
        f.check(
            &OrgId::parse("o0123456789ab").unwrap(),
            "softphone",
            chrono::DateTime::UNIX_EPOCH,
        )
    }

    #[test]
    fn only_final_statuses_make_calls_and_missed_is_inbound_unanswered() {
        for pending in ["initiated", "queued", "ringing", "in-progress"] {
            assert_eq!(
                check(&fields(pending, "inbound")),
                Ok(Checked::Pending(pending.into()))
            );
            // Not ended: ignored whatever the other fields say.
            let mut anonymous = fields(pending, "inbound");
            anonymous.peer = "anonymous".into();
            assert_eq!(check(&anonymous), Ok(Checked::Pending(pending.into())));
        }
        let missed = |status: &str, direction: &str| match check(&fields(status, direction)) {
            Ok(Checked::Call(c)) => c.missed(),
            other => panic!("{other:?}"),
        };
        assert!(missed("no-answer", "inbound"));
        assert!(missed("busy", "inbound"));
        assert!(missed("canceled", "inbound"));
        assert!(!missed("completed", "inbound"));
        assert!(!missed("no-answer", "outbound"));
        assert!(check(&fields("answered", "inbound")).is_err());
        assert!(check(&fields("completed", "sideways")).is_err());
    }

    #[test]
    fn the_key_is_call_id_and_direction() {
        let Ok(Checked::Call(c)) = check(&fields("completed", "outbound")) else {
            panic!("a call");
        };
        assert_eq!(c.key().as_str(), "call:CA1:outbound");
    }

    #[test]
    fn a_stored_call_reads_back_as_itself() {
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
