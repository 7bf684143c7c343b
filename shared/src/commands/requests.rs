//! Every operator action carries an `Idempotency-Key`, and each key keeps a record of the request
//! made under it: what it asked (digested) and the answer it got, put once, and never a record
//! that says "running" (`store::request`). A command whose effect is one decision writes the
//! record in that decision's own transaction (`Request::record`, `commands::Env::write`). A
//! command whose work is not one transaction (a DLQ's messages moved, a worker paused, a review
//! item's approval: each safe twice by its own conditions) does its work and then puts the
//! record holding its answer ([`Request::once`]): a repeat gets the stored answer and does
//! nothing, the same key with another request is refused, and a twin sent while the first still
//! works does the work too and is told what it did; later repeats get the first answer stored.

use super::{Outcome, Performed, Refused, Why};
use crate::store::item::{s, Builder, Read};
use crate::store::request::{AnswerOf, Repeats, RequestError, WithRequest, ANSWER, FINGERPRINT};
use crate::store::{Cond, Decision, Item, Plan, PutNew, Seen, Store, StoreError, Update};
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;

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

/// A command's work, to be done once before its record is put: how it ended and its answer.
type Work<'f, T> = Pin<Box<dyn Future<Output = Result<(Outcome, T), Refused>> + Send + 'f>>;

/// Work that is not one transaction, as a decision: done in `prepare` (once, however often the
/// record's write is tried again), deciding nothing but the answer its record keeps. A refusal
/// is an answer too; a failure a retry may get past keeps nothing (its record is not put), so a
/// retry does the work.
struct Outside<'f, T> {
    work: std::sync::Mutex<Option<Work<'f, T>>>,
    /// What the record keeps of the work's answer.
    done: Option<(Outcome, Value)>,
    /// The work's own answer (or its refusal), to give this request.
    own: Option<Result<(Outcome, T), Refused>>,
}

impl<T: serde::Serialize + Send + Sync> Decision for Outside<'_, T> {
    type Out = (Outcome, Value);
    type Error = Refused;

    fn keys(&self) -> Vec<String> {
        Vec::new()
    }

    async fn prepare(&mut self, _: &Seen) -> Result<(), Refused> {
        let work = self
            .work
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(work) = work {
            let done = match work.await {
                Ok((outcome, answer)) => {
                    let kept = (outcome, super::answers::json(&answer));
                    self.own = Some(Ok((outcome, answer)));
                    kept
                }
                Err(e) if !e.passing() => {
                    let kept = (Outcome::Refused(e.why), e.body());
                    self.own = Some(Err(e));
                    kept
                }
                Err(e) => return Err(e),
            };
            self.done = Some(done);
        }
        match &self.done {
            // An answer an adapter made of a status a retry may get past (the import
            // function's 503): given, not kept.
            Some((Outcome::Refused(why @ (Why::Unavailable | Why::Broken)), _)) => {
                Err(Refused::new(*why, "not_kept", "a retry may get past it"))
            }
            _ => Ok(()),
        }
    }

    fn decide(&self, _: &Seen, _: DateTime<Utc>) -> Result<Plan<(Outcome, Value)>, Refused> {
        // `prepare` did the work: the request's record is the whole write.
        let done = self.done.clone().ok_or_else(|| {
            let missing = StoreError::Malformed {
                pk: String::new(),
                detail: "work asked to decide before it was done".into(),
            };
            Refused::from(missing)
        })?;
        Ok(Plan::Write {
            steps: Vec::new(),
            out: done,
        })
    }
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

    /// Does `work` once under this request's key, then puts the record holding its answer
    /// (its outcome and body; a refusal's too), telling whether the answer is a repeat's: a
    /// repeat gets the stored answer and `work` is not done, the key with another request is
    /// refused `idempotency_key_reused`. A twin that did the work while the first did is told
    /// what it did (the record keeps the answer put first). A failure a retry may get past
    /// keeps nothing.
    pub async fn once<'f, T, Fut>(
        &self,
        store: &Store,
        now: DateTime<Utc>,
        work: Fut,
    ) -> Result<Performed<T>, Refused>
    where
        T: serde::Serialize + Send + Sync + 'f,
        Fut: Future<Output = Result<(Outcome, T), Refused>> + Send + 'f,
    {
        let outside = Outside {
            work: std::sync::Mutex::new(Some(Box::pin(work))),
            done: None,
            own: None,
        };
        let answer: AnswerOf<(Outcome, Value)> =
            Box::new(|(outcome, json), _| answer(*outcome, json));
        let mut with = WithRequest::new(outside, self.record(now), answer, Repeats::FromRecord);
        let written = store.write(&mut with, now).await;
        let Outside { done, own, .. } = with.into_decision();
        let own = own.map(|own| {
            own.map(|(outcome, answer)| Performed::Now {
                outcome,
                answer,
                repeat: false,
            })
        });
        match (written, own) {
            (Err(RequestError::Answered(record)), Some(own)) => {
                if let Some((outcome, answer)) = &done {
                    self.over_a_twins_refusal(store, &record, (*outcome, answer))
                        .await?;
                }
                own
            }
            (_, Some(own)) => own,
            (Err(RequestError::Answered(record)), None) => match kept(&record) {
                Some(kept) => Ok(Performed::Again(kept)),
                None => Err(Refused::from(crate::store::item::malformed(
                    &record, ANSWER,
                ))),
            },
            (Err(RequestError::Reused), None) => Err(super::idempotency_key_reused()),
            (Err(RequestError::Decision(refused)), None) => Err(refused),
            // `decide` plans nothing before the work has answered.
            (Ok(_), None) => Err(Refused::from(crate::store::item::malformed(
                &self.record(now),
                ANSWER,
            ))),
        }
    }

    /// A done request's answer in place of the refusal a twin of it kept meanwhile (it was
    /// refused because this one did the work: a review item resolved, a run decided), while
    /// the record still holds that refusal; a twin's done answer stays.
    async fn over_a_twins_refusal(
        &self,
        store: &Store,
        record: &Item,
        (outcome, answer): (Outcome, &Value),
    ) -> Result<(), StoreError> {
        let kept = record.opt_str(OUTCOME).and_then(Outcome::parse);
        let (Some(stored @ Outcome::Refused(_)), Outcome::Made(_)) = (kept, outcome) else {
            return Ok(());
        };
        let update = self::answer(outcome, answer)
            .into_iter()
            .fold(Update::new(), |update, (name, value)| {
                update.set(&name, value)
            })
            .when(Cond::Equals(OUTCOME.into(), s(stored.name())));
        store.update_if(&self.pk(), &update).await.map(|_| ())
    }

    /// The request's record less its answer: put with the answer the request gets (`answer`),
    /// in its effect's transaction or after its work ([`Request::once`]), so
    /// [`Request::look_up`] finds it, and a request of another body under the key is refused.
    pub fn record(&self, now: DateTime<Utc>) -> Item {
        Builder::new(&self.pk(), "ops_request", self.by)
            .str(FINGERPRINT, &self.fingerprint)
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
    /// fingerprint is not read): done with its outcome and answer; `None` when none arrived
    /// (or its record expired). (A record without an answer is a claim an earlier release made
    /// before its work, left running.)
    pub async fn look_up(&self, store: &Store) -> Result<Option<Looked>, StoreError> {
        let Some(item) = store.get(&self.pk()).await? else {
            return Ok(None);
        };
        Ok(Some(Looked {
            done: kept(&item).map(|k| (k.outcome, k.answer)),
            at: item.opt_str("at").map(str::to_owned),
        }))
    }
}

/// What became of a request, asked by its key.
#[derive(Clone, Debug)]
pub struct Looked {
    /// Its outcome and answer; `None` for an earlier release's claim, still running.
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

impl Kept {
    /// A kept refusal's code (`refused` for an answer that names none).
    pub fn code(&self) -> &str {
        self.answer["error"].as_str().unwrap_or("refused")
    }
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
