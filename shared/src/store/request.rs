//! A request under a client's key, written with what it does: the key's record (what the request
//! asked, digested, and the answer it got) is read with a decision's items and put in the same
//! transaction as the decision's plan, as an event's own item is written with its effect. So a
//! request is never half remembered: its effect and its record are stored together or not at
//! all, and no record says "running".
//!
//! The record is put only when none is stored. What a stored one means depends on what keys
//! the effect ([`Repeats`]):
//! - an effect keyed by the request's key answers a repeat itself: a record of the same request
//!   leaves the decision to answer, and one of another request refuses what would write
//!   ([`RequestError::Reused`]); what the decision answers from its effect alone (a repeat of the
//!   same payment sent with another body's bytes, or a conflict it names field by field) it
//!   still answers;
//! - any other effect (a new invoice, a deal's move) is answered from the record: a record of
//!   the same request is [`RequestError::Answered`] (its stored answer is the answer), one of
//!   another request [`RequestError::Reused`], and the decision is not asked.

use super::write::{Decision, Plan, Seen, Written};
use super::{Cond, Item, Step, StoreError, Update};
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};

/// The record's attributes that say what the request asked: the same key with another digest
/// is another request.
pub const FINGERPRINT: &str = "fingerprint";

/// The record's attribute that holds the answer: a record without one is a claim of the
/// request (made by a command claimed before it runs, or by an earlier release), not an answer.
pub const ANSWER: &str = "answer";

/// What a decision under a key found of the key's record.
enum Found<'a> {
    Nothing,
    /// Another request's (another digest).
    Another,
    /// This request's, answered.
    Answered(&'a Item),
    /// This request's, claimed and never answered: answered now, by an update.
    Claimed,
}

/// The answer a request's record keeps, made from the plan's outcome: `true` for a repeat's.
pub type AnswerOf<T> = Box<dyn Fn(&T, bool) -> Vec<(String, AttributeValue)> + Send + Sync>;

/// How a request under a key was refused, or its decision's error.
#[derive(Debug)]
pub enum RequestError<E> {
    /// The key's record is another request's.
    Reused,
    /// The key's record is this request's, answered before: its answer is the answer.
    Answered(Box<Item>),
    Decision(E),
}

/// How a repeat of a request is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Repeats {
    /// By its effect, keyed by the request's key.
    FromEffect,
    /// From the record: the effect carries no key of the request.
    FromRecord,
}

impl<E: From<StoreError>> From<StoreError> for RequestError<E> {
    fn from(e: StoreError) -> Self {
        Self::Decision(E::from(e))
    }
}

/// `decision`, with the request's record read after its keys and put with its plan.
pub struct WithRequest<D: Decision> {
    decision: D,
    /// The record less its answer: its key, what was asked (`FINGERPRINT`), when, its expiry.
    record: Item,
    answer: AnswerOf<D::Out>,
    repeats: Repeats,
    /// How many keys the decision reads itself (the record's follows them).
    own: usize,
}

impl<D: Decision> WithRequest<D> {
    pub fn new(decision: D, record: Item, answer: AnswerOf<D::Out>, repeats: Repeats) -> Self {
        let own = decision.keys().len();
        Self {
            decision,
            record,
            answer,
            repeats,
            own,
        }
    }

    /// The decision it wraps (what its work did, after the write).
    pub fn into_decision(self) -> D {
        self.decision
    }

    fn record_pk(&self) -> String {
        match self.record.get("pk") {
            Some(AttributeValue::S(pk)) => pk.clone(),
            _ => String::new(),
        }
    }

    /// The record's step, holding the answer to `out`: put new, or for a record a claim of
    /// the request left without an answer (`claimed`), answered while it still has none.
    fn step(&self, out: &D::Out, repeat: bool, claimed: bool) -> Step {
        let answer = (self.answer)(out, repeat);
        if !claimed {
            let mut record = self.record.clone();
            record.extend(answer);
            return Step::PutNew(record);
        }
        let fingerprint = self.record.get(FINGERPRINT).cloned();
        let update = answer
            .into_iter()
            .fold(Update::new(), |update, (name, value)| {
                update.set(&name, value)
            })
            .when(Cond::All(vec![
                Cond::Lacks(ANSWER.into()),
                Cond::Equals(
                    FINGERPRINT.into(),
                    fingerprint.unwrap_or(AttributeValue::Null(true)),
                ),
            ]));
        Step::Update {
            pk: self.record_pk(),
            update,
        }
    }
}

impl<D: Decision> Decision for WithRequest<D> {
    type Out = D::Out;
    type Error = RequestError<D::Error>;

    fn keys(&self) -> Vec<String> {
        let mut keys = self.decision.keys();
        keys.push(self.record_pk());
        keys
    }

    fn reads_stale_first(&self) -> bool {
        self.decision.reads_stale_first()
    }

    /// The record never changes once put, and a record read absent is put only if new: what
    /// holds is what holds for the decision.
    fn stale_holds(&self, plan: &Plan<D::Out>) -> bool {
        self.decision.stale_holds(plan)
    }

    /// The decision's own work before it decides, unless its record answers the request (a
    /// repeat, or another request's key): then the decision is not asked, so nothing is done.
    async fn prepare(&mut self, seen: &Seen) -> Result<(), Self::Error> {
        if self.repeats == Repeats::FromRecord
            && seen.get(self.own).is_some_and(|r| {
                r.get(FINGERPRINT) != self.record.get(FINGERPRINT) || r.contains_key(ANSWER)
            })
        {
            return Ok(());
        }
        let own = seen.head(self.own);
        self.decision
            .prepare(&own)
            .await
            .map_err(RequestError::Decision)
    }

    fn decide(&self, seen: &Seen, now: DateTime<Utc>) -> Result<Plan<D::Out>, Self::Error> {
        let found = match seen.get(self.own) {
            None => Found::Nothing,
            Some(r) if r.get(FINGERPRINT) != self.record.get(FINGERPRINT) => Found::Another,
            Some(r) if r.contains_key(ANSWER) => Found::Answered(r),
            Some(_) => Found::Claimed,
        };
        match (self.repeats, &found) {
            (Repeats::FromRecord, Found::Another) => return Err(RequestError::Reused),
            (Repeats::FromRecord, Found::Answered(r)) => {
                return Err(RequestError::Answered(Box::new((*r).clone())))
            }
            _ => {}
        }
        let plan = self
            .decision
            .decide(&seen.head(self.own), now)
            .map_err(RequestError::Decision)?;
        match found {
            // Another request's key: only an answer from the effect, never a write.
            Found::Another => {
                return match plan {
                    Plan::Done(written) => Ok(Plan::Done(written)),
                    _ => Err(RequestError::Reused),
                }
            }
            // Remembered with its first answer: the decision answers a repeat itself.
            Found::Answered(_) => return Ok(plan),
            Found::Nothing | Found::Claimed => {}
        }
        let claimed = matches!(found, Found::Claimed);
        Ok(match plan {
            Plan::Write { mut steps, out } => {
                steps.push(self.step(&out, false, claimed));
                Plan::Write { steps, out }
            }
            Plan::Acknowledge { mut steps, out } => {
                steps.push(self.step(&out, true, claimed));
                Plan::Acknowledge { steps, out }
            }
            // Done before under this key but not remembered (by another way in, or before
            // records were written with their effect): remembered now, as a repeat.
            Plan::Done(Written::Repeat { stored }) => Plan::Acknowledge {
                steps: vec![self.step(&stored, true, claimed)],
                out: stored,
            },
            Plan::Done(Written::New(out)) => Plan::Write {
                steps: vec![self.step(&out, false, claimed)],
                out,
            },
            // The key's effect with another payload: refused, and nothing remembered.
            Plan::Done(conflict) => Plan::Done(conflict),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::item::{s, Builder};

    /// A decision of one key: a put of its item, or a repeat when it is stored.
    struct PutOnce;

    impl Decision for PutOnce {
        type Out = u32;
        type Error = StoreError;

        fn keys(&self) -> Vec<String> {
            vec!["EVENT#1".into()]
        }

        fn decide(&self, seen: &Seen, _: DateTime<Utc>) -> Result<Plan<u32>, StoreError> {
            Ok(match seen.stored() {
                Some(_) => Plan::Done(Written::Repeat { stored: 1 }),
                None => Plan::Write {
                    steps: vec![Step::PutNew(Builder::new("EVENT#1", "event", "o").build())],
                    out: 1,
                },
            })
        }
    }

    fn keyed(fingerprint: &str) -> WithRequest<PutOnce> {
        let record = Builder::new("REQUEST#k", "ops_request", "o")
            .str(FINGERPRINT, fingerprint)
            .build();
        let answer: AnswerOf<u32> =
            Box::new(|out, repeat| vec![("answer".into(), s(format!("{out}:{repeat}")))]);
        WithRequest::new(PutOnce, record, answer, Repeats::FromEffect)
    }

    fn answer_of(step: &Step) -> Option<&str> {
        match step {
            Step::PutNew(item) => item
                .get("answer")
                .and_then(|a| a.as_s().ok())
                .map(String::as_str),
            _ => None,
        }
    }

    #[test]
    fn a_new_request_puts_its_record_with_the_effect_and_its_answer() {
        let with = keyed("a");
        assert_eq!(with.keys(), ["EVENT#1", "REQUEST#k"]);
        let Ok(Plan::Write { steps, out: 1 }) =
            with.decide(&Seen::of(vec![None, None]), Utc::now())
        else {
            panic!("a write");
        };
        assert_eq!(steps.len(), 2);
        assert_eq!(answer_of(&steps[1]), Some("1:false"));
    }

    #[test]
    fn a_repeat_is_the_decisions_and_a_record_is_put_only_where_none_is() {
        let with = keyed("a");
        let event = Some(Builder::new("EVENT#1", "event", "o").build());
        let record = Some(
            Builder::new("REQUEST#k", "ops_request", "o")
                .str(FINGERPRINT, "a")
                .str(ANSWER, "1:false")
                .build(),
        );
        let remembered = with.decide(&Seen::of(vec![event.clone(), record]), Utc::now());
        assert!(matches!(
            remembered,
            Ok(Plan::Done(Written::Repeat { stored: 1 }))
        ));
        let Ok(Plan::Acknowledge { steps, .. }) =
            with.decide(&Seen::of(vec![event, None]), Utc::now())
        else {
            panic!("the record put, as a repeat");
        };
        assert_eq!(steps.len(), 1);
        assert_eq!(answer_of(&steps[0]), Some("1:true"));
    }

    #[test]
    fn a_key_another_request_holds_is_refused_what_would_write() {
        let with = keyed("b");
        let record = Some(
            Builder::new("REQUEST#k", "ops_request", "o")
                .str(FINGERPRINT, "a")
                .build(),
        );
        assert!(matches!(
            with.decide(&Seen::of(vec![None, record.clone()]), Utc::now()),
            Err(RequestError::Reused)
        ));
        // The effect stored: its own answer (here a repeat; a conflict names its fields).
        let event = Some(Builder::new("EVENT#1", "event", "o").build());
        assert!(matches!(
            with.decide(&Seen::of(vec![event, record]), Utc::now()),
            Ok(Plan::Done(Written::Repeat { stored: 1 }))
        ));
    }

    #[test]
    fn a_claim_left_without_an_answer_is_answered_by_the_write_while_it_has_none() {
        let with = WithRequest {
            repeats: Repeats::FromRecord,
            ..keyed("a")
        };
        let claim = Builder::new("REQUEST#k", "ops_request", "o")
            .str(FINGERPRINT, "a")
            .build();
        let Ok(Plan::Write { steps, .. }) =
            with.decide(&Seen::of(vec![None, Some(claim)]), Utc::now())
        else {
            panic!("the write, answering the claim");
        };
        let Step::Update { pk, update } = &steps[1] else {
            panic!("an update of the claim: {steps:?}");
        };
        assert_eq!(pk, "REQUEST#k");
        assert!(format!("{update:?}").contains(ANSWER), "{update:?}");
    }

    #[test]
    fn a_request_whose_effect_carries_no_key_is_answered_from_its_record() {
        let with = WithRequest {
            repeats: Repeats::FromRecord,
            ..keyed("a")
        };
        let record = |fingerprint: &str| {
            Some(
                Builder::new("REQUEST#k", "ops_request", "o")
                    .str(FINGERPRINT, fingerprint)
                    .str("answer", "1:false")
                    .build(),
            )
        };
        let Err(RequestError::Answered(kept)) =
            with.decide(&Seen::of(vec![None, record("a")]), Utc::now())
        else {
            panic!("the stored answer");
        };
        assert_eq!(
            kept.get("answer")
                .and_then(|a| a.as_s().ok())
                .map(String::as_str),
            Some("1:false")
        );
        assert!(matches!(
            with.decide(&Seen::of(vec![None, record("b")]), Utc::now()),
            Err(RequestError::Reused)
        ));
        let Ok(Plan::Write { steps, .. }) = with.decide(&Seen::of(vec![None, None]), Utc::now())
        else {
            panic!("a new request writes");
        };
        assert_eq!(steps.len(), 2);
    }
}
