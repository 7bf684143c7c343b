//! Every operator action carries an `Idempotency-Key`, and each key keeps a record of the request
//! made under it: what it asked (digested) and the answer it got. A command whose effect is
//! keyed by the request's key writes the record in its effect's own transaction
//! (`Request::record`, `store::request`), so effect and record are stored together. Any other
//! command's first request claims the key (a conditional put), runs, and stores its answer on
//! the claim; a repeat gets the stored answer, a repeat while the first still runs is told so,
//! and the same key with another request is refused. A claim whose request died is taken over
//! after a minute.

use super::{Done, Outcome, Refused};
use crate::store::item::{s, Builder, Read};
use crate::store::request::{ANSWER, FINGERPRINT};
use crate::store::{Cond, Item, PutNew, Store, StoreError, Update};
use crate::time;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Duration, Utc};
use serde_json::Value;
use std::future::Future;

/// How long a claim holds before a later request with the key may take it over.
const HOLD_SECS: i64 = 60;

/// What a key's claim found.
#[derive(Clone, Debug, PartialEq)]
pub enum Claimed {
    /// This request holds the key: run it, then `finish`.
    Run,
    /// The key's request finished: its outcome, answer and time.
    Done(Kept),
    /// The key's request is still running.
    Running,
    /// The key came with another request.
    Reused,
}

/// One operator's key: who (`admin` or the organisation), the key, and what was asked.
pub struct Request<'a> {
    pub by: &'a str,
    /// Keys shared by every API key of this organisation (an assistant's `call_id`); `None`:
    /// each API key's own.
    pub shared: Option<&'a crate::ids::OrgId>,
    pub key: &'a str,
    /// The method, the path and the body: the same key with another is `Reused`.
    pub fingerprint: String,
}

impl Request<'_> {
    /// Under the organisation's key space, or the admin's own.
    fn pk(&self) -> String {
        let key = crate::ids::key_part(self.key);
        if let Some(org) = self.shared {
            return org.pk(&format!("REQUEST#{key}"));
        }
        match self.by {
            // Every admin token (two during a rotation) is the one admin.
            admin if admin.starts_with("admin") => format!("ADMIN#OPS_REQUEST#{key}"),
            key_id => format!("KEY#{key_id}#OPS_REQUEST#{key}"),
        }
    }

    pub async fn claim(&self, store: &Store, now: DateTime<Utc>) -> Result<Claimed, StoreError> {
        let until = time::format(now + Duration::seconds(HOLD_SECS));
        let item = Builder::new(&self.pk(), "ops_request", self.by)
            .str(FINGERPRINT, &self.fingerprint)
            .str("until", &until)
            .time("at", now)
            .num("expires_at", (now + crate::store::REQUEST_KEPT).timestamp())
            .build();
        let stored = match store.put_new(item).await? {
            PutNew::Created => return Ok(Claimed::Run),
            PutNew::Existing(stored) => stored,
        };
        self.found(store, &stored, now, &until).await
    }

    async fn found(
        &self,
        store: &Store,
        stored: &Item,
        now: DateTime<Utc>,
        until: &str,
    ) -> Result<Claimed, StoreError> {
        if stored.opt_str(FINGERPRINT) != Some(self.fingerprint.as_str()) {
            return Ok(Claimed::Reused);
        }
        if let Some(done) = kept(stored) {
            return Ok(Claimed::Done(done));
        }
        // Still running, unless its hold ran out: then this request takes it over.
        let take = Update::new().set("until", s(until)).when(Cond::All(vec![
            Cond::Lacks(OUTCOME.into()),
            Cond::Before("until".into(), s(time::format(now))),
        ]));
        Ok(if store.update_if(&self.pk(), &take).await? {
            Claimed::Run
        } else {
            Claimed::Running
        })
    }

    /// Runs `run` once under this request's key, telling whether the answer is a repeat's
    /// (the stored one): a repeat gets the stored outcome and answer, a repeat while the first
    /// runs is refused `request_in_progress`, the key with another request
    /// `idempotency_key_reused`. A refusal is the answer too and is stored; a failure a retry
    /// may get past gives the key up.
    pub async fn once_telling<F, Fut>(
        &self,
        store: &Store,
        now: DateTime<Utc>,
        run: F,
    ) -> Result<Done, Refused>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<(Outcome, Value), Refused>>,
    {
        match self.claim(store, now).await? {
            Claimed::Run => {}
            Claimed::Done(kept) => return Ok(Done::again(kept)),
            Claimed::Running => {
                return Err(Refused::conflict(
                    "request_in_progress",
                    "a request with this Idempotency-Key is running; ask again in a moment",
                ))
            }
            Claimed::Reused => return Err(super::idempotency_key_reused()),
        }
        let (outcome, answer) = match run().await {
            Ok(done) => done,
            Err(e) if !e.passing() => (Outcome::Refused(e.why), e.body()),
            Err(e) => {
                self.release(store).await?;
                return Err(e);
            }
        };
        self.finish(store, outcome, &answer).await?;
        Ok(Done::first(outcome, answer))
    }

    /// Gives the key up after a failure a retry may get past (a 5xx): the next request with it
    /// runs at once.
    pub async fn release(&self, store: &Store) -> Result<(), StoreError> {
        let update = Update::new()
            .set("until", s("0000"))
            .when(Cond::Lacks(OUTCOME.into()));
        store.update_if(&self.pk(), &update).await.map(|_| ())
    }

    /// The record of a request whose effect is keyed by the request's key (a payment, a credit
    /// note, a top-up, a void under an `Idempotency-Key`), less its answer: written in the
    /// effect's transaction with the answer the request gets (`answer`), so
    /// [`Request::look_up`] finds it, and a request of another body under the key is refused.
    pub fn record(&self, now: DateTime<Utc>) -> Item {
        Builder::new(&self.pk(), "ops_request", self.by)
            .str(FINGERPRINT, &self.fingerprint)
            .str("until", "0000")
            .time("at", now)
            .num("expires_at", (now + crate::store::REQUEST_KEPT).timestamp())
            .build()
    }

    /// Keeps `refused` as the answer of a request whose record is written with its effect
    /// (`Repeats::FromRecord`) when it was refused before or instead of its write: a repeat
    /// gets the refusal again. `Some` with the answer stored under the key meanwhile (this
    /// request's, done by a twin); `None` when the refusal is the key's answer now (or the key
    /// is another request's, whose record stays).
    pub async fn keep_refusal(
        &self,
        store: &Store,
        refused: &Refused,
        now: DateTime<Utc>,
    ) -> Result<Option<Kept>, StoreError> {
        let mut item = self.record(now);
        item.extend(answer(Outcome::Refused(refused.why), &refused.body()));
        match store.put_new(item).await? {
            PutNew::Created => Ok(None),
            PutNew::Existing(stored) => Ok(
                match stored.opt_str(FINGERPRINT) == Some(self.fingerprint.as_str()) {
                    true => kept(&stored),
                    false => None,
                },
            ),
        }
    }

    /// What became of the request sent under this key (`by`, `shared` and `key` name it; the
    /// fingerprint is not read): done with its outcome and answer, or still running; `None`
    /// when none arrived (or its record expired).
    pub async fn look_up(&self, store: &Store) -> Result<Option<Looked>, StoreError> {
        let Some(item) = store.get(&self.pk()).await? else {
            return Ok(None);
        };
        Ok(Some(Looked {
            done: kept(&item).map(|k| (k.outcome, k.answer)),
            at: item.opt_str("at").map(str::to_owned),
        }))
    }

    /// Stores the answer the request got.
    pub async fn finish(
        &self,
        store: &Store,
        outcome: Outcome,
        answer: &Value,
    ) -> Result<(), StoreError> {
        let update = Update::new()
            .set(OUTCOME, s(outcome.name()))
            .set(ANSWER, s(answer.to_string()))
            .when(Cond::Exists);
        store.update_if(&self.pk(), &update).await.map(|_| ())
    }
}

/// What became of a request, asked by its key.
#[derive(Clone, Debug)]
pub struct Looked {
    /// Its outcome and answer once it is done; `None` while it runs.
    pub done: Option<(Outcome, Value)>,
    pub at: Option<String>,
}

/// The attribute of a record that names its outcome (`Outcome::name`).
const OUTCOME: &str = "outcome";

/// What a record keeps of the answer a request got.
pub fn answer(outcome: Outcome, answer: &Value) -> Vec<(String, AttributeValue)> {
    vec![
        (OUTCOME.into(), s(outcome.name())),
        (ANSWER.into(), s(answer.to_string())),
    ]
}

/// What a finished record keeps of its request's answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Kept {
    pub outcome: Outcome,
    pub answer: Value,
    /// When the request was answered (the record's time).
    pub at: Option<String>,
}

/// A finished record's outcome, answer and time (an answer that cannot be read is null).
pub(super) fn kept(record: &Item) -> Option<Kept> {
    let outcome = match record.opt_str(OUTCOME) {
        Some(name) => Outcome::parse(name)?,
        None => legacy(record.u64_of("status").ok()?)?,
    };
    let answer = serde_json::from_str(record.opt_str(ANSWER)?).unwrap_or(Value::Null);
    let at = record.opt_str("at").map(str::to_owned);
    Some(Kept {
        outcome,
        answer,
        at,
    })
}

/// A record finished before outcomes were named kept its HTTP status instead (such records
/// expire within `REQUEST_KEPT` of the release that named them): the outcome it stood for.
fn legacy(status: u64) -> Option<Outcome> {
    use super::{Made, Why};
    Some(match status {
        200 => Outcome::Made(Made::Done),
        201 => Outcome::Made(Made::Created),
        202 => Outcome::Made(Made::Accepted),
        400 => Outcome::Refused(Why::Invalid),
        403 => Outcome::Refused(Why::Forbidden),
        404 => Outcome::Refused(Why::NotFound),
        409 => Outcome::Refused(Why::Conflict),
        413 => Outcome::Refused(Why::TooLarge),
        _ => return None,
    })
}
