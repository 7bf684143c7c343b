//! Recording a call once: one consistent read of its key and the peer's identity, then one
//! transaction that stores the call (and, for an unknown number, its lead).

use super::{Call, CallInput};
use crate::contacts::{self, Identity};
use crate::ids::OrgId;
use crate::review::ReviewItem;
use crate::store::{Item, Step, Store, StoreError, Transacted};
use serde_json::{json, Value};

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
