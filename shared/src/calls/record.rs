//! Recording a call once: one read of its key and the peer's identity (eventually consistent:
//! every plan holds on it), then one transaction that stores the call (and, for an unknown
//! number, its lead).

use super::{Call, CallInput};
use crate::contacts::{self, Identity};
use crate::ids::OrgId;
use crate::store::{Answer, Decision, Mismatch, Plan, Seen, Step, Store, StoreError, Written};
use chrono::{DateTime, Utc};
use serde_json::Value;

/// How recording a call ended: stored now, or the call stored under its key.
pub type Recorded = Written<Call>;

impl Answer for Call {
    /// `{"call"}`: the stored call on a repeat.
    fn answer(&self) -> Value {
        let answer = CallAnswer {
            duplicate: false,
            call: self.view(),
        };
        serde_json::to_value(answer).expect("a call's answer serialises")
    }
}

/// A call, first or repeated (`duplicate`, set by the arrival: `Written::answer`).
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct CallAnswer {
    pub duplicate: bool,
    pub call: super::CallView,
}

/// Stores a call once: its key and the peer's identity read together, then the call (and, for
/// an unknown number, its lead) in one transaction. A report with the same key and another
/// payload keeps the first and is a conflict for the edge to file.
pub async fn record(store: &Store, input: &CallInput) -> Result<Recorded, StoreError> {
    store.write(&mut recording(input), input.at).await
}

/// A call's recording, as a decision (for a command that writes it through its own door).
pub fn recording(input: &CallInput) -> impl Decision<Out = Call, Error = StoreError> + '_ {
    RecordCall { input }
}

struct RecordCall<'a> {
    input: &'a CallInput,
}

impl Decision for RecordCall<'_> {
    type Out = Call;
    type Error = StoreError;

    fn keys(&self) -> Vec<String> {
        let identity = Identity::phone(&self.input.peer);
        vec![
            self.input.pk(),
            contacts::identity_pk(&self.input.org, &identity),
        ]
    }

    fn reads_stale_first(&self) -> bool {
        true
    }

    /// Every plan holds on a stale read: a stored call never changes, and the caller's identity
    /// read absent is put under `attribute_not_exists` (one read present is there).
    fn stale_holds(&self, _plan: &Plan<Call>) -> bool {
        true
    }

    fn decide(&self, seen: &Seen, _: DateTime<Utc>) -> Result<Plan<Call>, StoreError> {
        let input = self.input;
        if let Some(item) = seen.stored() {
            let stored = Call::from_item(item)?;
            let mismatch = Mismatch::of(
                &stored.fingerprint,
                &input.fingerprint(),
                &[
                    ("status", stored.input.status != input.status),
                    ("duration", stored.input.duration != input.duration),
                    ("peer", stored.input.peer != input.peer),
                ],
            );
            return Ok(Plan::Done(Written::again(stored, mismatch)));
        }
        let identity = Identity::phone(&input.peer);
        let (known, mut steps) = match seen.get(1) {
            Some(item) => (contacts::known(item)?, Vec::new()),
            None => contacts::lead_steps(&input.org, &identity, &input.peer, input.at),
        };
        let call = Call {
            input: input.clone(),
            contact_id: known.contact_id.clone(),
            owner: known.owner.clone(),
            fingerprint: input.fingerprint(),
        };
        steps.insert(0, Step::PutNew(call.to_item()));
        Ok(Plan::Write { steps, out: call })
    }
}

/// The organisation's calls, newest first.
pub async fn list(store: &Store, org: &OrgId) -> Result<Vec<Call>, StoreError> {
    Ok(page(store, org, 200, None).await?.0)
}

/// A page of the organisation's calls, newest first, and the next page's cursor while more
/// remain.
pub async fn page(
    store: &Store,
    org: &OrgId,
    limit: i32,
    cursor: Option<&str>,
) -> Result<(Vec<Call>, Option<String>), StoreError> {
    store
        .newest_page(
            (crate::store::Index::Lists, &org.pk("CALLS")),
            (limit, cursor),
            Call::from_item,
        )
        .await
}
