//! A reply run's record: the reply as an outgoing message of its conversation and its run's
//! move to `sent`, in one transaction, so a sent reply is never left unrecorded by a failure
//! between the two.

use super::automation::Rule;
use super::runs::{self, Lease, RunState};
use super::Fired;
use crate::messages::{self, Conversation};
use crate::store::{Step, Store, StoreError, Transacted};
use chrono::{DateTime, Utc};

/// Records reply `id` (its `text`) in `conversation` as `run`'s, sent. Whoever took the run over
/// meanwhile, the reply is stored once and the run becomes `sent`.
pub async fn record(
    store: &Store,
    (rule, fired, lease): (&Rule, &Fired, &Lease),
    (conversation, id, text): (&Conversation, &str, &str),
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let event_key = &fired.event_key;
    let early = messages::early_status(store, conversation, id).await?;
    let message = messages::outgoing(conversation, id, text, early, now);
    let sent = RunState::Sent;
    let steps = vec![
        Step::PutNew(message.to_item()),
        runs::settle_step(&rule.org, &rule.rule_id, event_key, lease, sent, now),
    ];
    let done = match store.transact(steps).await? {
        Transacted::Done => true,
        // Stored before, or the lease was lost: each half on its own, both idempotent.
        Transacted::Refused { .. } | Transacted::Contended => false,
    };
    if !done {
        messages::record_outgoing(store, &message).await?;
        runs::delivered(store, &rule.org, &rule.rule_id, event_key, now).await?;
    }
    messages::touch(store, conversation, now).await?;
    Ok(())
}
