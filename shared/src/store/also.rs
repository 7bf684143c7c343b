//! A decision with what else its write holds: more items read with its own, and steps made from
//! them and from the decision's outcome, in the same transaction — the review item a person's
//! approval resolves, written with the payment it books, all or nothing. (A request's record,
//! `store::request`, is this shape for a request's key.)

use super::write::{Decision, Plan, Seen, Written};
use super::Step;
use chrono::{DateTime, Utc};

/// What else a write holds: the steps that the items read under its own keys (in order) and
/// the decision's outcome (`true`: a repeat of it) call for, or the decision's error, so that
/// nothing is written. No steps over a repeat leave the repeat as it is.
pub type More<T, E> =
    Box<dyn Fn(&Seen, &T, bool, DateTime<Utc>) -> Result<Vec<Step>, E> + Send + Sync>;

/// `decision` and what else its write holds (`More`). Its outcome tells whether that was
/// written with it: always with a new outcome; with a repeat only when `More` still asked for
/// steps (the decision's effect stored before what else it holds, by an earlier release).
pub struct Also<D: Decision> {
    decision: D,
    keys: Vec<String>,
    more: More<D::Out, D::Error>,
    /// How many keys the decision reads itself.
    own: usize,
}

impl<D: Decision> Also<D> {
    pub fn new(decision: D, keys: Vec<String>, more: More<D::Out, D::Error>) -> Self {
        let own = decision.keys().len();
        Self {
            decision,
            keys,
            more,
            own,
        }
    }
}

impl<D: Decision> Decision for Also<D> {
    type Out = (D::Out, bool);
    type Error = D::Error;

    fn keys(&self) -> Vec<String> {
        let mut keys = self.decision.keys();
        keys.extend(self.keys.iter().cloned());
        keys
    }

    async fn prepare(&mut self, seen: &Seen) -> Result<(), Self::Error> {
        self.decision.prepare(&seen.head(self.own)).await
    }

    fn decide(&self, seen: &Seen, now: DateTime<Utc>) -> Result<Plan<Self::Out>, D::Error> {
        let more = seen.tail(self.own);
        Ok(match self.decision.decide(&seen.head(self.own), now)? {
            Plan::Write { mut steps, out } => {
                steps.extend((self.more)(&more, &out, false, now)?);
                Plan::Write {
                    steps,
                    out: (out, true),
                }
            }
            Plan::Acknowledge { mut steps, out } => {
                steps.extend((self.more)(&more, &out, true, now)?);
                Plan::Acknowledge {
                    steps,
                    out: (out, true),
                }
            }
            Plan::Done(Written::Repeat { stored }) => {
                let steps = (self.more)(&more, &stored, true, now)?;
                match steps.is_empty() {
                    true => Plan::Done(Written::Repeat {
                        stored: (stored, false),
                    }),
                    false => Plan::Acknowledge {
                        steps,
                        out: (stored, true),
                    },
                }
            }
            Plan::Done(done) => Plan::Done(done.map(|out| (out, false))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::item::Builder;
    use crate::store::write::PutOnce;
    use crate::store::StoreError;

    fn settling() -> Also<PutOnce> {
        let event = Builder::new("EVENT#1", "event", "o").build();
        let more: More<(), StoreError> = Box::new(|seen, _, _, _| {
            Ok(match seen.get(0) {
                Some(_) => vec![Step::Delete("ITEM#1".into())],
                None => Vec::new(),
            })
        });
        Also::new(PutOnce(event), vec!["ITEM#1".into()], more)
    }

    #[test]
    fn what_else_a_write_holds_is_read_after_its_keys_and_written_with_it() {
        let also = settling();
        assert_eq!(also.keys(), ["EVENT#1", "ITEM#1"]);
        let item = Some(Builder::new("ITEM#1", "item", "o").build());
        let Ok(Plan::Write {
            steps,
            out: ((), true),
        }) = also.decide(&Seen::of(vec![None, item.clone()]), Utc::now())
        else {
            panic!("the put and the delete");
        };
        assert_eq!(steps.len(), 2);
        // Stored before what else it holds: that alone, as a repeat.
        let event = Some(Builder::new("EVENT#1", "event", "o").build());
        let Ok(Plan::Acknowledge { steps, .. }) =
            also.decide(&Seen::of(vec![event.clone(), item]), Utc::now())
        else {
            panic!("the delete alone");
        };
        assert_eq!(steps.len(), 1);
        // Nothing more to hold: the repeat as it is.
        assert!(matches!(
            also.decide(&Seen::of(vec![event, None]), Utc::now()),
            Ok(Plan::Done(Written::Repeat {
                stored: ((), false)
            }))
        ));
    }
}
