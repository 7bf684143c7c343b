//! Where a written delivery becomes an answer: the answer (`Written::answer`, which alone sets
//! `duplicate`), the outcome named for the metrics, and each conflict (the same key with another
//! payload) filed as one `payload_mismatch` review item. The webhook edge and the API's softphone
//! calls and CSV uploads answer through `tell`.

use crate::ids::{EventKey, OrgId};
use crate::review::Kind;
use crate::store::{Answer, Store, StoreError, Written};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

/// Every event one delivery carried, each with how it was written. Most deliveries carry one;
/// a messenger's batch carries several, and answers with a batch answer of its own.
#[derive(Clone, Debug)]
pub struct Recorded<T> {
    pub events: Vec<(EventKey, Written<T>)>,
    /// The answer of a batch; `None`: the one event's own answer.
    pub batch: Option<Value>,
    /// What the delivery did beside its events: it stored something (a status applied), it
    /// filed review items (messages it could not read).
    pub stored_more: bool,
    pub review_more: bool,
}

impl<T> Recorded<T> {
    /// One event, written.
    pub fn one(key: EventKey, written: Written<T>) -> Self {
        Self {
            events: vec![(key, written)],
            batch: None,
            stored_more: false,
            review_more: false,
        }
    }

    /// The delivery's key for logs: its first event's.
    pub fn key(&self) -> Option<&EventKey> {
        self.events.first().map(|(k, _)| k)
    }

    /// Whether anything of the delivery was written now.
    pub fn is_new(&self) -> bool {
        self.stored_more || self.events.iter().any(|(_, w)| w.is_new())
    }
}

/// An answer and the outcome it is counted as: `stored`, `review` or `duplicate`.
#[derive(Clone, Debug, PartialEq)]
pub struct Told {
    pub answer: Value,
    pub outcome: &'static str,
}

/// Answers a delivery, filing each conflict it met as a `payload_mismatch` of `kind`.
pub async fn tell<T: Answer>(
    store: &Store,
    org: &OrgId,
    kind: Kind,
    recorded: &Recorded<T>,
    context: Value,
    now: DateTime<Utc>,
) -> Result<Told, StoreError> {
    let conflict =
        crate::review::file_conflicts(store, org, kind, &recorded.events, &context, now).await? > 0;
    let review = recorded.review_more
        || recorded
            .events
            .iter()
            .any(|(_, w)| w.is_new() && w.value().review());
    let outcome = match (recorded.is_new(), review || conflict) {
        (true, false) => "stored",
        (_, true) => "review",
        (false, false) => "duplicate",
    };
    let answer = match (&recorded.batch, recorded.events.first()) {
        (Some(batch), _) => batch.clone(),
        (None, Some((_, written))) => written.answer(),
        (None, None) => json!({}),
    };
    Ok(Told { answer, outcome })
}

/// A status this source does not record (`payment.processing`, monobank `hold`, a call still
/// `ringing`, ...): nothing written.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct IgnoredDelivery {
    pub status: Ignored,
    /// What the sender said (its event type or status).
    pub provider_status: String,
}

/// A verified body that cannot be read: kept with a review item; the same body again is a
/// duplicate of the kept one.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct UnparseableDelivery {
    pub status: Unparseable,
    pub duplicate: bool,
    /// The review item's reason, `unparseable_payload`.
    #[schema(value_type = String)]
    pub review: crate::review::Reason,
    pub detail: String,
}

/// The status of a delivery that wrote nothing: `ignored`.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Ignored {
    Ignored,
}

/// The status of a delivery kept for a person: `unparseable`.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Unparseable {
    Unparseable,
}
