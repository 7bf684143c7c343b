//! The typed messages of the queues: each read once off its queue into the job its worker
//! applies, or refused as unreadable or as another queue's.

use super::Consequence;
use crate::ids::OrgId;

/// What applying one message wrote: new effects, and effects that were already there (a
/// redelivery absorbed by a conditional key).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    pub written: usize,
    pub absorbed: usize,
}

impl Applied {
    pub fn one(created: bool) -> Self {
        Self {
            written: usize::from(created),
            absorbed: usize::from(!created),
        }
    }

    pub fn and(self, other: Self) -> Self {
        Self {
            written: self.written + other.written,
            absorbed: self.absorbed + other.absorbed,
        }
    }
}

/// Why a message body is not a worker's job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unread {
    /// Not a message at all: kept for a person as `malformed_message`.
    Malformed(String),
    /// Another queue's message: parked as `wrong_queue`.
    Elsewhere { org: OrgId, key: String },
}

/// The typed message of a queue, read once off the queue: its job, and what it is about.
pub trait Job: Sized + Send {
    fn read(body: &str) -> Result<Self, Unread>;
    /// The organisation and key, for logs and review items.
    fn about(&self) -> (OrgId, String);

    /// What applying it settles of its event's waiting mark (`effects::waiting`).
    fn settles(&self) -> Settles {
        Settles::Nothing
    }
}

/// What a job, once applied, settles of the waiting mark of the event its message names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Settles {
    /// Nothing: not a tracked consequence.
    Nothing,
    /// These tracked consequences' keys, taken out of the mark's set.
    Keys(Vec<String>),
}

impl Settles {
    /// What is left to settle when the consequences `failed` failed for good: the other keys,
    /// taken out (the mark stays for the failed ones).
    pub fn without(self, failed: &[&str]) -> Self {
        match self {
            Self::Keys(keys) => Self::Keys(
                keys.into_iter()
                    .filter(|k| !failed.contains(&k.as_str()))
                    .collect(),
            ),
            Self::Nothing => Self::Nothing,
        }
    }
}

/// A consequence's job: read as a consequence, taken only when it is this queue's kind.
macro_rules! consequence_job {
    ($($ty:ty),*) => {$(
        impl Job for $ty {
            fn read(body: &str) -> Result<Self, Unread> {
                let consequence = serde_json::from_str::<Consequence>(body)
                    .map_err(|e| Unread::Malformed(e.to_string()))?;
                let (org, key) = (consequence.org().clone(), consequence.key());
                Self::try_from(consequence).map_err(|_| Unread::Elsewhere { org, key })
            }

            fn about(&self) -> (OrgId, String) {
                let consequence = Consequence::from(self.clone());
                (consequence.org().clone(), consequence.key())
            }

            fn settles(&self) -> Settles {
                let consequence = Consequence::from(self.clone());
                match consequence.is_tracked() {
                    true => Settles::Keys(vec![consequence.key()]),
                    false => Settles::Nothing,
                }
            }
        }
    )*};
}

consequence_job!(super::Automated, super::Matched);

/// The notifications queue's message: what tells people of one event (its notifications and
/// activity lines, notifications first) that the fan-out did not write at once (a team's
/// notification, a replay's or a resumption's records); the worker takes each key out of the
/// event's waiting mark once they are written. A message of one consequence alone (sent
/// without a source, one too large or holding a character SQS refuses, or sent by an earlier
/// release) reads as a set of one; an earlier release's `whole` is read as any other.
#[derive(Clone, Debug, PartialEq)]
pub struct Records {
    told: Vec<super::Told>,
}

/// The field of a message body holding its records.
pub const RECORDS: &str = "records";

impl Records {
    /// What it tells, in order: never empty (a message of none is not read).
    pub fn told(self) -> Vec<super::Told> {
        self.told
    }
}

impl Job for Records {
    fn read(body: &str) -> Result<Self, Unread> {
        #[derive(serde::Deserialize)]
        struct Many {
            records: Vec<Consequence>,
        }
        let all = match serde_json::from_str::<Many>(body) {
            Ok(many) => many.records,
            Err(_) => {
                let one = serde_json::from_str::<Consequence>(body)
                    .map_err(|e| Unread::Malformed(e.to_string()))?;
                vec![one]
            }
        };
        let Some(first) = all.first() else {
            return Err(Unread::Malformed("a message of no records".into()));
        };
        let (org, key) = (first.org().clone(), first.key());
        let told = all
            .into_iter()
            .map(super::Told::try_from)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| Unread::Elsewhere { org, key })?;
        Ok(Self { told })
    }

    /// The first record's: a notification when there is one (the one that can fail for good).
    fn about(&self) -> (OrgId, String) {
        let first = Consequence::from(self.told.first().expect("read holds one or more").clone());
        (first.org().clone(), first.key())
    }

    fn settles(&self) -> Settles {
        Settles::Keys(
            self.told
                .iter()
                .map(|t| Consequence::from(t.clone()).key())
                .collect(),
        )
    }
}

/// A request of the import queue: a statement, or a large file's next steps.
impl Job for crate::bank::import::Request {
    fn read(body: &str) -> Result<Self, Unread> {
        Self::from_body(body)
            .ok_or_else(|| Unread::Malformed("names no integration and no file import".into()))
    }

    /// The integration by its digest: a monobank integration's id is its webhook's credential.
    fn about(&self) -> (OrgId, String) {
        match self {
            Self::Statement { integration_id } => (
                integration_id.org.clone(),
                format!("import:{}", integration_id.digest()),
            ),
            Self::File { org, import_id } => (org.clone(), format!("import:{import_id}")),
            Self::Turn { org } => (org.clone(), format!("imports:{org}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn line(key: &str) -> serde_json::Value {
        json!({"type": "activity", "org": "o7ab54e84e6e3", "entity_kind": "contact",
               "entity_id": "c1", "key": key, "kind": "payment", "text": "paid",
               "at": "2026-12-02T10:00:00.000Z"})
    }

    #[test]
    fn one_events_records_read_as_one_job_that_settles_their_keys() {
        // A message of an earlier release says `whole`: its keys are taken out all the same.
        let body = json!({"source": "PK", "whole": true, RECORDS: [line("a"), line("b")]});
        let job = Records::read(&body.to_string()).unwrap();
        assert_eq!(
            job.settles(),
            Settles::Keys(vec![
                "activity:contact:c1:a".into(),
                "activity:contact:c1:b".into()
            ])
        );
        assert_eq!(
            job.settles().without(&["activity:contact:c1:a"]),
            Settles::Keys(vec!["activity:contact:c1:b".into()])
        );
        assert_eq!(job.about().1, "activity:contact:c1:a");
        assert_eq!(job.told().len(), 2);
        let part = json!({"source": "PK", RECORDS: [line("a"), line("b")]});
        assert_eq!(
            Records::read(&part.to_string()).unwrap().settles(),
            Settles::Keys(vec![
                "activity:contact:c1:a".into(),
                "activity:contact:c1:b".into()
            ])
        );
    }

    #[test]
    fn a_message_of_one_record_as_sent_before_reads_as_a_set_of_one() {
        let job = Records::read(&line("a").to_string()).unwrap();
        assert_eq!(
            job.settles(),
            Settles::Keys(vec!["activity:contact:c1:a".into()])
        );
    }

    #[test]
    fn no_records_or_another_queues_are_not_this_queues_job() {
        let none = json!({"source": "PK", RECORDS: []});
        assert!(matches!(
            Records::read(&none.to_string()),
            Err(Unread::Malformed(_))
        ));
        let credit = json!({"type": "bank_credit", "org": "o7ab54e84e6e3", "tx_id": "t1",
                            "at": "2026-12-02T10:00:00.000Z"});
        let mixed = json!({RECORDS: [line("a"), credit]});
        assert!(matches!(
            Records::read(&mixed.to_string()),
            Err(Unread::Elsewhere { .. })
        ));
    }
}
