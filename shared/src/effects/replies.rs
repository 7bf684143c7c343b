//! A reply run's record: the reply as an outgoing message of its conversation and its run's
//! move to `sent`, in one transaction, so a sent reply is never left unrecorded by a failure
//! between the two.

use super::automation::Rule;
use super::runs::{self, Lease, RunState};
use super::Fired;
use crate::messages::{self, Conversation};
use crate::store::{Step, Store, StoreError, Transacted};
use chrono::{DateTime, Utc};

/// How long a sent reply's record is tried again in the same attempt (a reply's budget keeps
/// two seconds for it): a failure a retry may get past would otherwise leave a reply the
/// customer has unrecorded, and its run `needs_check`.
const RECORD_WITHIN: std::time::Duration = std::time::Duration::from_secs(2);

/// Records reply `id` (its `text`) in `conversation` as `run`'s, sent. Whoever took the run over
/// meanwhile, the reply is stored once and the run becomes `sent`; a failure a retry may get
/// past is tried again within `RECORD_WITHIN` (each half is idempotent).
pub async fn record(
    store: &Store,
    run: (&Rule, &Fired, &Lease),
    reply: (&Conversation, &str, &str),
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let mut rounds = crate::store::write::Rounds::until(std::time::Instant::now() + RECORD_WITHIN);
    let mut failed = None;
    while rounds.next().await {
        match record_once(store, run, reply, now).await {
            Err(e) if e.is_retryable() => failed = Some(e),
            done => return done,
        }
    }
    Err(failed.unwrap_or(StoreError::Contended {
        pk: reply.0.id.clone(),
    }))
}

async fn record_once(
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
    // A status that came between the read above and the message's write waits on its own item.
    messages::caught_up(store, conversation, id, now).await?;
    messages::touch(store, conversation, now).await?;
    Ok(())
}
