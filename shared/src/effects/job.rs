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

    /// Whether its event waits on it (`effects::waiting`): a tracked consequence.
    fn tracked(&self) -> bool {
        false
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

            fn tracked(&self) -> bool {
                Consequence::from(self.clone()).is_tracked()
            }
        }
    )*};
}

consequence_job!(
    super::Notification,
    super::ActivityLine,
    super::Automated,
    super::Matched
);

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
