//! How an event write ended, in one vocabulary for every source: new, a repeat of what is
//! stored, or a conflict (the same key, another payload); and the answer an event gives.

use serde_json::Value;

/// Why a repeat is not the same event: the fields that differ, and both fingerprints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    pub fields: Vec<&'static str>,
    pub stored: String,
    pub received: String,
}

impl Mismatch {
    /// The mismatch between a stored event and a new arrival of its key: `None` when their
    /// fingerprints agree, else the named fields that differ (`payload` when none of those does).
    pub fn of(stored: &str, received: &str, fields: &[(&'static str, bool)]) -> Option<Self> {
        if stored == received {
            return None;
        }
        let mut differ: Vec<&'static str> = fields.iter().filter(|f| f.1).map(|f| f.0).collect();
        if differ.is_empty() {
            differ.push("payload");
        }
        Some(Self {
            fields: differ,
            stored: stored.to_owned(),
            received: received.to_owned(),
        })
    }
}

/// How an event write ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Written<T> {
    /// Written now.
    New(T),
    /// The key was stored with the same payload: nothing of the event written (a carrier's
    /// re-push writes only its own acknowledgement, see `Plan::Acknowledge`).
    Repeat { stored: T },
    /// The key was stored with another payload: nothing written, the first kept.
    Conflict { stored: T, mismatch: Mismatch },
}

impl<T> Written<T> {
    /// What was written now, or what is stored.
    pub fn value(&self) -> &T {
        match self {
            Self::New(v) | Self::Repeat { stored: v } | Self::Conflict { stored: v, .. } => v,
        }
    }

    pub fn into_value(self) -> T {
        match self {
            Self::New(v) | Self::Repeat { stored: v } | Self::Conflict { stored: v, .. } => v,
        }
    }

    /// The same outcome of another value.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Written<U> {
        match self {
            Self::New(v) => Written::New(f(v)),
            Self::Repeat { stored } => Written::Repeat { stored: f(stored) },
            Self::Conflict { stored, mismatch } => Written::Conflict {
                stored: f(stored),
                mismatch,
            },
        }
    }

    pub fn is_new(&self) -> bool {
        matches!(self, Self::New(_))
    }

    /// The answer to this arrival: the event's answer, with `"duplicate"` saying whether this
    /// arrival wrote it. The one place an answer is marked as a repeat.
    pub fn answer(&self) -> Value
    where
        T: Answer,
    {
        let mut answer = match self {
            Self::New(v) => v.answer(),
            Self::Repeat { stored: v } | Self::Conflict { stored: v, .. } => v.repeated(),
        };
        if let Value::Object(fields) = &mut answer {
            fields.insert("duplicate".into(), Value::Bool(!self.is_new()));
        }
        answer
    }

    /// A stored event met again: a repeat when `mismatch` names nothing, else a conflict.
    pub fn again(stored: T, mismatch: Option<Mismatch>) -> Self {
        match mismatch {
            None => Self::Repeat { stored },
            Some(mismatch) => Self::Conflict { stored, mismatch },
        }
    }
}

/// The answer an event gives: decided once when it is written, given again whenever the same
/// event arrives again ([`Written::answer`] says which).
pub trait Answer {
    fn answer(&self) -> Value;
    /// The answer to a later arrival of the same event: the first answer, unless the event says
    /// what this arrival did beside what the first did (a payment: `applied` zero).
    fn repeated(&self) -> Value {
        self.answer()
    }
    /// Whether writing it also filed a review item.
    fn review(&self) -> bool {
        false
    }
}
