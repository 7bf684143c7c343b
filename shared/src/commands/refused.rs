//! How a command ends, in the domain's words: [`Made`] when it was done, [`Refused`] (with its
//! [`Why`]) when it was not. No status code is named here: the edge that asked turns these into
//! its transport's answer (`http`: a status and a problem body, once; the AI step: a tool
//! result or a retry; a request record: what it keeps for a repeat).

use crate::fields::FieldError;
use crate::ledger::LedgerError;
use crate::payments::PaymentError;
use crate::store::StoreError;
use serde_json::{Map, Value};
use std::error::Error as StdError;

/// What a command that was done did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Made {
    /// Done now, or found done (a state already reached, a payment already booked).
    Done,
    /// A new record made (a contact, a key, an invoice, a rule).
    Created,
    /// Taken on, to happen after the answer (an import queued, a resend queued).
    Accepted,
}

/// Why a command was not done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    /// The input is not one the command takes (a field, a key, a file's rows).
    Invalid,
    /// The actor may not ask for it.
    Forbidden,
    /// What it names is not there in the actor's organisation.
    NotFound,
    /// What it names is in a state that refuses it (not open, not a draft, a limit reached,
    /// the request's key used with another request).
    Conflict,
    /// The input is larger than the command takes.
    TooLarge,
    /// A part it needs is missing or busy now: the same request later may be done.
    Unavailable,
    /// Our own defect (a malformed stored item, a request DynamoDB refuses): the cause went to
    /// the log, and a retry cannot help.
    Broken,
}

/// How a request ended: done, or refused. What a request record keeps, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Made(Made),
    Refused(Why),
}

/// The code of [`Refused::answered`]: never an answer's.
const ANSWERED: &str = "request_answered";

/// Every outcome with its name in a request record.
const NAMES: [(Outcome, &str); 10] = [
    (Outcome::Made(Made::Done), "done"),
    (Outcome::Made(Made::Created), "created"),
    (Outcome::Made(Made::Accepted), "accepted"),
    (Outcome::Refused(Why::Invalid), "invalid"),
    (Outcome::Refused(Why::Forbidden), "forbidden"),
    (Outcome::Refused(Why::NotFound), "not_found"),
    (Outcome::Refused(Why::Conflict), "conflict"),
    (Outcome::Refused(Why::TooLarge), "too_large"),
    (Outcome::Refused(Why::Unavailable), "unavailable"),
    (Outcome::Refused(Why::Broken), "broken"),
];

impl Outcome {
    pub fn name(self) -> &'static str {
        NAMES
            .iter()
            .find(|(o, _)| *o == self)
            .map_or("broken", |(_, name)| name)
    }

    pub fn parse(name: &str) -> Option<Self> {
        NAMES.iter().find(|(_, n)| *n == name).map(|(o, _)| *o)
    }

    pub fn is_made(self) -> bool {
        matches!(self, Self::Made(_))
    }
}

/// A command not done: why, a stable code, a detail for a person, and what else it names.
#[derive(Debug)]
pub struct Refused {
    pub why: Why,
    pub code: &'static str,
    pub detail: String,
    /// The input field that was refused.
    pub field: Option<&'static str>,
    /// What else the refusal names: a conflict's stored `outcome`, a file's refused `rows`.
    pub more: Map<String, Value>,
    /// Decided on an index's read, which may lag the table by a moment
    /// ([`Refused::on_a_lagging_read`]).
    pub(crate) lagging: bool,
}

impl Refused {
    pub fn new(why: Why, code: &'static str, detail: impl Into<String>) -> Self {
        Self {
            why,
            code,
            detail: detail.into(),
            field: None,
            more: Map::new(),
            lagging: false,
        }
    }

    pub fn invalid(code: &'static str, detail: impl Into<String>) -> Self {
        Self::new(Why::Invalid, code, detail)
    }

    /// `invalid_field`, naming the field.
    pub fn field(field: &'static str, code: &'static str, detail: impl Into<String>) -> Self {
        Self {
            field: Some(field),
            ..Self::invalid(code, detail)
        }
    }

    pub fn forbidden(detail: impl Into<String>) -> Self {
        Self::new(Why::Forbidden, "forbidden", detail)
    }

    pub fn not_found(what: &str) -> Self {
        Self::new(Why::NotFound, "not_found", format!("{what} not found"))
    }

    pub fn conflict(code: &'static str, detail: impl Into<String>) -> Self {
        Self::new(Why::Conflict, code, detail)
    }

    pub fn too_large(code: &'static str, detail: impl Into<String>) -> Self {
        Self::new(Why::TooLarge, code, detail)
    }

    pub fn unavailable(code: &'static str, detail: impl Into<String>) -> Self {
        Self::new(Why::Unavailable, code, detail)
    }

    /// Not a refusal: the request's key was answered before, with `outcome` and `answer` (its
    /// record, read with the command's decision, `store::request`). Only [`super::perform`]
    /// meets it, and answers with them as a repeat.
    pub(super) fn answered(kept: super::requests::Kept) -> Self {
        Self::new(Why::Conflict, ANSWERED, "answered before")
            .with("outcome", Value::from(kept.outcome.name()))
            .with("answer", kept.answer)
            .with("at", kept.at.map_or(Value::Null, Value::from))
    }

    /// The stored outcome, answer and time of [`Refused::answered`].
    pub(super) fn kept(&self) -> Option<super::requests::Kept> {
        if self.code != ANSWERED {
            return None;
        }
        let outcome = Outcome::parse(self.more.get("outcome")?.as_str()?)?;
        Some(super::requests::Kept {
            outcome,
            answer: self.more.get("answer")?.clone(),
            at: self
                .more
                .get("at")
                .and_then(Value::as_str)
                .map(str::to_owned),
        })
    }

    /// The same refusal, naming `value` as its `name` too.
    pub fn with(mut self, name: &str, value: Value) -> Self {
        self.more.insert(name.to_owned(), value);
        self
    }

    /// A failure of a part beneath: the whole cause chain goes to the log, the refusal says
    /// nothing internal (`unavailable` when a retry can help, `internal` when it cannot).
    pub fn failed(err: &(dyn StdError + 'static), retryable: bool) -> Self {
        let mut chain = Vec::new();
        let mut cause = err.source();
        while let Some(c) = cause {
            chain.push(c.to_string());
            cause = c.source();
        }
        tracing::error!(error.message = %err, error.cause_chain = ?chain, "request failed");
        match retryable {
            true => Self::unavailable("unavailable", "temporarily unavailable; retry later"),
            false => Self::new(Why::Broken, "internal", "internal error"),
        }
    }

    /// The same refusal, decided on a read of an index (a ledger line found by its id, a
    /// paused integration by its digest), which may lag the table by a moment: the same
    /// request a moment later may find what was written just before it, so nothing of this
    /// refusal is kept under the request's key.
    pub fn on_a_lagging_read(self) -> Self {
        Self {
            lagging: true,
            ..self
        }
    }

    /// Whether the same request later may be done: then nothing of it is kept.
    pub fn passing(&self) -> bool {
        matches!(self.why, Why::Unavailable | Why::Broken) || self.lagging
    }

    /// The refusal's body: `error`, `detail`, and `field` and what else it names.
    pub fn body(&self) -> Value {
        let mut body = self.more.clone();
        body.insert("error".into(), Value::from(self.code));
        body.insert("detail".into(), Value::from(self.detail.as_str()));
        if let Some(field) = self.field {
            body.insert("field".into(), Value::from(field));
        }
        Value::Object(body)
    }
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.detail)
    }
}

/// A refused field names it.
impl From<FieldError> for Refused {
    fn from(err: FieldError) -> Self {
        Self::field(err.field, "invalid_field", err.to_string())
    }
}

/// A store failure may pass (throttling, a conflict, a timeout) or not (a malformed stored
/// item, a request DynamoDB refuses: our own defect).
impl From<StoreError> for Refused {
    fn from(err: StoreError) -> Self {
        let retryable = err.is_retryable();
        Self::failed(&err, retryable)
    }
}

impl From<PaymentError> for Refused {
    fn from(err: PaymentError) -> Self {
        let retryable = err.is_retryable();
        Self::failed(&err, retryable)
    }
}

impl From<LedgerError> for Refused {
    fn from(e: LedgerError) -> Self {
        match e {
            LedgerError::Store(e) => e.into(),
            LedgerError::CurrencyMismatch { .. } => {
                Self::invalid("currency_mismatch", e.to_string())
            }
            LedgerError::NotHeld => Self::conflict("not_held", e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_on_a_lagging_read_keeps_its_why_and_body_but_is_not_kept() {
        let settled = Refused::not_found("ledger line");
        let lagging = Refused::not_found("ledger line").on_a_lagging_read();
        assert!(!settled.passing());
        assert!(lagging.passing());
        assert_eq!((lagging.why, lagging.body()), (settled.why, settled.body()));
    }
}
