//! The one write path of every event: read the keys in one `BatchGetItem`, decide
//! purely, write all of the plan at once (one `TransactWriteItems`; a lone put or update, one
//! conditional `PutItem` or `UpdateItem`: `Store::commit`), and on a lost condition back off and
//! decide again.
//!
//! A decision may ask for its first read eventually consistent (`Decision::reads_stale_first`:
//! half the read units), when it can tell which of its plans hold on items up to a second old
//! (`Decision::stale_holds`): a repeat answered from an event's own item, which never changes
//! once written; a plan whose every read item is held by a step (an update held to the version
//! read, a put of a key read absent). Any other plan, or a refusal, is decided again on a
//! consistent read before anything is written or answered.
//!
//! A domain supplies a [`Decision`]; the store owns the loop, the backoff and the one attempt
//! limit. The result is a [`Written`]: new, a repeat of what is stored, or a conflict (the same
//! key with another payload). Only the edge turns that into an answer.

pub use super::written::{Answer, Mismatch, Written};
use super::{Item, Step, Store, StoreError, Transacted};
use chrono::{DateTime, Utc};
use std::future::Future;
use std::time::{Duration, Instant};

/// Rounds of read-decide-write before a contended write answers "retry" (503). Each round after
/// the first waits [`backoff`]; the rounds also stop at the write's time budget.
pub const ATTEMPTS: u32 = 40;
/// The longest a write keeps retrying a contended key: well inside a webhook function's timeout.
pub const BUDGET: Duration = Duration::from_secs(10);

/// The pause before round `attempt + 1`: grows from ~5 ms to at most 200 ms, half of it random,
/// so writers that lost the same race do not meet again in lockstep.
pub fn backoff(attempt: u32) -> Duration {
    let cap = 5u64.saturating_mul(1 << attempt.min(6)).min(200);
    let jitter = u64::from(u16::from_le_bytes(crate::ids::random_bytes::<2>()));
    Duration::from_millis(cap / 2 + jitter % (cap / 2 + 1))
}

tokio::task_local! {
    /// The deadline of the request a write serves (a webhook's invocation): no round of any
    /// write inside it, nested or not, starts past it.
    static DEADLINE: Instant;
}

/// Runs `work` with every write inside it (its retries, a counted transaction's, a nested
/// write's) held to `deadline`: a caller with 5 s is not kept 10 by a retry budget below it.
pub async fn within<F: Future>(deadline: Instant, work: F) -> F::Output {
    DEADLINE.scope(deadline, work).await
}

/// The rounds of a contended write: the first at once, each later one after [`backoff`], at
/// most [`ATTEMPTS`] and none past the deadline (nor past the request's, under [`within`]). A request made of several event writes (a bank
/// row's re-match) retries in the same rounds as one write.
#[derive(Debug)]
pub struct Rounds {
    attempt: u32,
    deadline: Instant,
}

impl Rounds {
    pub fn new() -> Self {
        Self::until(Instant::now() + BUDGET)
    }

    pub fn until(deadline: Instant) -> Self {
        let deadline = DEADLINE
            .try_with(|request| (*request).min(deadline))
            .unwrap_or(deadline);
        Self {
            attempt: 0,
            deadline,
        }
    }

    /// Waits for the next round; `false` when no round is left.
    pub async fn next(&mut self) -> bool {
        let attempt = self.attempt;
        if attempt >= ATTEMPTS {
            return false;
        }
        self.attempt += 1;
        if attempt == 0 {
            return true;
        }
        let pause = backoff(attempt - 1);
        if Instant::now() + pause > self.deadline {
            return false;
        }
        tracing::debug!(attempt, "a condition was lost; trying again");
        tokio::time::sleep(pause).await;
        true
    }
}

impl Default for Rounds {
    fn default() -> Self {
        Self::new()
    }
}

/// What one consistent read found, in the order of [`Decision::keys`].
#[derive(Clone, Debug, Default)]
pub struct Seen(Vec<Option<Item>>);

impl Seen {
    /// What a read found, as a unit test of a decision gives it.
    #[cfg(test)]
    pub(crate) fn of(items: Vec<Option<Item>>) -> Self {
        Self(items)
    }

    /// What was read under the first `n` keys: a decision's own, when another reads after them.
    pub(super) fn head(&self, n: usize) -> Self {
        Self(self.0.iter().take(n).cloned().collect())
    }

    /// What was read under the keys after the first `n`: what a decision's wrapper reads.
    pub(super) fn tail(&self, n: usize) -> Self {
        Self(self.0.iter().skip(n).cloned().collect())
    }

    /// The item under the `i`th key, if it is stored.
    pub fn get(&self, i: usize) -> Option<&Item> {
        self.0.get(i).and_then(Option::as_ref)
    }

    /// The event's own item (the first key), if it is stored: a repeat.
    pub fn stored(&self) -> Option<&Item> {
        self.get(0)
    }

    fn hold(&mut self, i: usize, item: Item) {
        if self.0.len() <= i {
            self.0.resize(i + 1, None);
        }
        self.0[i] = Some(item);
    }
}

/// What a decision found: write these steps (step 0 writes the first key: the event's own, or
/// for an invoice its counter), or answer from what was read and write nothing.
#[derive(Clone, Debug)]
pub enum Plan<T> {
    Write {
        steps: Vec<Step>,
        out: T,
    },
    /// The event is new but what it says was written before (a carrier's re-push under a new
    /// event id): write only its own acknowledgement, and answer as a repeat of `out`.
    Acknowledge {
        steps: Vec<Step>,
        out: T,
    },
    Done(Written<T>),
}

/// One event write, supplied by a domain: which items to read, and what to write given them.
pub trait Decision: Send + Sync {
    type Out: Send;
    type Error: From<StoreError> + Send;

    /// The items to read in one `BatchGetItem` (consistent, unless `reads_stale_first`); the
    /// first is the event's own key.
    fn keys(&self) -> Vec<String>;

    /// Whether the decision needs the read at all. A decision that does not (a bank row, one
    /// conditional put) writes at once, and a refusal hands it the holder of its key: one round
    /// trip either way.
    fn reads(&self) -> bool {
        true
    }

    /// Whether the first read may be eventually consistent (see the module's comment).
    fn reads_stale_first(&self) -> bool {
        false
    }

    /// Whether `plan`, decided on a read that may be a second old, holds as it is: true only
    /// when every read item it relies on either never changes once written or is held by one of
    /// its steps. Asked only of a decision that reads stale first.
    fn stale_holds(&self, _plan: &Plan<Self::Out>) -> bool {
        false
    }

    /// Work done before deciding: at most once however often the write is retried (asking a
    /// provider to confirm a payment, fetching a message's attachments), or a read that must be
    /// as fresh as the round's (an SMS event's ledger lines, read only when its message has an
    /// inbox line). Called before every decision; an implementation keeps what it did once, and
    /// does again what each round needs.
    fn prepare(&mut self, _seen: &Seen) -> impl Future<Output = Result<(), Self::Error>> + Send {
        async { Ok(()) }
    }

    /// Pure: what to write given what was read, at `now`.
    fn decide(&self, seen: &Seen, now: DateTime<Utc>) -> Result<Plan<Self::Out>, Self::Error>;
}

/// The plainest decision: one item, put if its key is free; a repeat when it is there (an
/// assistant's reply stored to be sent). Its use is what it is written with: a request's record.
pub struct PutOnce(pub Item);

impl Decision for PutOnce {
    type Out = ();
    type Error = StoreError;

    fn keys(&self) -> Vec<String> {
        vec![Step::PutNew(self.0.clone())
            .pk()
            .unwrap_or_default()
            .to_owned()]
    }

    fn decide(&self, seen: &Seen, _: DateTime<Utc>) -> Result<Plan<()>, StoreError> {
        Ok(match seen.stored() {
            Some(_) => Plan::Done(Written::Repeat { stored: () }),
            None => Plan::Write {
                steps: vec![Step::PutNew(self.0.clone())],
                out: (),
            },
        })
    }
}

impl Store {
    /// Writes one event through `decision` (see the module's comment), within [`BUDGET`].
    pub async fn write<D: Decision>(
        &self,
        decision: &mut D,
        now: DateTime<Utc>,
    ) -> Result<Written<D::Out>, D::Error> {
        self.write_until(decision, now, Instant::now() + BUDGET)
            .await
    }

    /// [`Store::write`], retrying no later than `deadline` (an invocation's remaining time).
    pub async fn write_until<D: Decision>(
        &self,
        decision: &mut D,
        now: DateTime<Utc>,
        deadline: Instant,
    ) -> Result<Written<D::Out>, D::Error> {
        let keys = decision.keys();
        let mut seen = Seen(vec![None; keys.len()]);
        let mut fresh = !decision.reads();
        // Whether `seen` may be stale: only the first read, and only when the decision can tell
        // what holds on it.
        let mut stale = decision.reads() && decision.reads_stale_first();
        let mut rounds = Rounds::until(deadline);
        while rounds.next().await {
            if !fresh {
                seen = Seen(self.get_many_as(&keys, !stale).await?);
            }
            fresh = false;
            // The event's key taken meanwhile hands its holder over: decide again at once.
            loop {
                decision.prepare(&seen).await?;
                let decided = decision.decide(&seen, now);
                if stale && !matches!(&decided, Ok(plan) if decision.stale_holds(plan)) {
                    stale = false;
                    seen = Seen(self.get_many(&keys).await?);
                    continue;
                }
                let (steps, out, repeat) = match decided? {
                    Plan::Done(written) => return Ok(written),
                    Plan::Write { steps, out } => (steps, out, false),
                    Plan::Acknowledge { steps, out } => (steps, out, true),
                };
                // Only a step 0 that writes the first key hands its holder back as that key's.
                let first = steps.first().and_then(Step::pk) == keys.first().map(String::as_str);
                match self.commit(steps).await? {
                    Transacted::Done if repeat => return Ok(Written::Repeat { stored: out }),
                    Transacted::Done => return Ok(Written::New(out)),
                    Transacted::Refused {
                        step: 0,
                        existing: Some(item),
                    } if first && seen.stored().is_none() => seen.hold(0, item),
                    // Something moved: the next round reads consistently.
                    _ => {
                        stale = false;
                        break;
                    }
                }
            }
        }
        Err(StoreError::Contended {
            pk: keys.into_iter().next().unwrap_or_default(),
        }
        .into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_grows_and_stays_under_its_cap() {
        for attempt in 0..ATTEMPTS {
            let pause = backoff(attempt);
            let cap = 5u64.saturating_mul(1 << attempt.min(6)).min(200);
            assert!(
                pause >= Duration::from_millis(cap / 2),
                "{attempt}: {pause:?}"
            );
            assert!(pause <= Duration::from_millis(cap), "{attempt}: {pause:?}");
        }
    }

    #[tokio::test]
    async fn a_requests_deadline_holds_every_write_inside_it() {
        let soon = Instant::now() + Duration::from_millis(1);
        let rounds = within(soon, async {
            let mut rounds = Rounds::new();
            let mut taken = 0;
            while rounds.next().await {
                taken += 1;
            }
            taken
        })
        .await;
        assert_eq!(
            rounds, 1,
            "the first round only: the budget below is cut to the request's"
        );
        let mut free = Rounds::new();
        assert!(
            free.next().await && free.next().await,
            "outside, the write's own budget"
        );
    }

    #[test]
    fn a_stored_event_met_again_is_a_repeat_or_a_conflict() {
        assert_eq!(Written::again(1, None), Written::Repeat { stored: 1 });
        let mismatch = Mismatch {
            fields: vec!["amount"],
            stored: "a".into(),
            received: "b".into(),
        };
        assert!(matches!(
            Written::again(1, Some(mismatch)),
            Written::Conflict { stored: 1, .. }
        ));
    }
}
