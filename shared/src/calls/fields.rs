//! The fields of a call report, held to their limits before anything is written.

use super::{CallInput, CallStatus, Direction, MAX_DURATION};
use crate::contacts;
use crate::ids::{ExternalId, OrgId};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// What the caller's fields say, held to their limits: the body of `POST /api/calls` and of a
/// generic provider's `data`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CallFields {
    /// The softphone's id of the call: 1 to 255 bytes, no control characters, white space or `#`.
    #[schema(
        min_length = 1,
        max_length = 255,
        pattern = "^[^\\s#\\x00-\\x1f\\x7f]+$"
    )]
    pub call_id: String,
    /// `inbound` or `outbound` (read as text, so another is `400 invalid_field`).
    #[schema(value_type = Direction)]
    pub direction: String,
    /// E.164: `+` and 8 to 15 digits (spaces, dashes, dots and brackets between them allowed).
    #[schema(
        pattern = "^\\+[ ().-]*[1-9](?:[ ().-]*[0-9]){7,14}[ ().-]*$",
        example = "+380441234567"
    )]
    pub peer: String,
    /// `completed`, `busy`, `failed`, `no-answer`, `canceled` (and, ignored: `initiated`,
    /// `queued`, `ringing`, `in-progress`).
    #[schema(
        pattern = "^(completed|busy|failed|no-answer|canceled|initiated|queued|ringing|in-progress)$"
    )]
    pub status: String,
    /// Seconds, 0 to 86400.
    #[serde(default, deserialize_with = "crate::fields::whole_number")]
    #[schema(maximum = 86400)]
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
            scope: None,
        }))
    }
}

/// A call report for tests: `CA1` from `+380441234567`, checked for organisation `o0123456789ab`.
#[cfg(test)]
pub(super) mod sample {
    use super::*;

    pub fn fields(status: &str, direction: &str) -> CallFields {
        CallFields {
            call_id: "CA1".into(),
            direction: direction.into(),
            peer: "+380441234567".into(),
            status: status.into(),
            duration: 0,
        }
    }

    pub fn check(f: &CallFields) -> Result<Checked, FieldError> {
        f.check(
            &OrgId::parse("o0123456789ab").unwrap(),
            "softphone",
            chrono::DateTime::UNIX_EPOCH,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::sample::{check, fields};
    use super::*;

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
}
