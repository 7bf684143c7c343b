//! Consequences of stored events: notifications, activity-log lines, automation runs. The stream
//! fan-out derives them from the stored item alone (no dual write); each worker writes with its
//! own conditional key, so a redelivered message is a no-op.

pub mod activity;
pub mod automation;
pub mod derive;
pub mod notify;
pub mod outbound;
pub mod queue;
pub mod runs;
pub mod targets;
pub mod worker;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One consequence, as it travels through SQS.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Consequence {
    /// To `recipient`, or to every team member (one copy each, keyed `KEY#RECIPIENT`) when `None`.
    Notification {
        org: String,
        key: String,
        recipient: Option<String>,
        text: String,
        at: String,
    },
    /// A line in the log of a contact, deal or company, appended once per key.
    Activity {
        org: String,
        entity_kind: String,
        entity_id: String,
        key: String,
        kind: String,
        text: String,
        at: String,
    },
    /// Something rules can react to (`invoice.paid`, `message.received`, `call.missed`).
    Trigger {
        org: String,
        trigger: String,
        event_key: String,
        at: String,
        context: Value,
    },
}

/// The queue a consequence goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QueueKind {
    Notifications,
    Activity,
    Automation,
}

impl Consequence {
    pub fn queue(&self) -> QueueKind {
        match self {
            Self::Notification { .. } => QueueKind::Notifications,
            Self::Activity { .. } => QueueKind::Activity,
            Self::Trigger { .. } => QueueKind::Automation,
        }
    }

    pub fn org(&self) -> &str {
        match self {
            Self::Notification { org, .. }
            | Self::Activity { org, .. }
            | Self::Trigger { org, .. } => org,
        }
    }

    /// The consequence's own key, for logs and review items.
    pub fn key(&self) -> String {
        match self {
            Self::Notification { key, .. } => format!("notification:{key}"),
            Self::Activity {
                entity_kind,
                entity_id,
                key,
                ..
            } => format!("activity:{entity_kind}:{entity_id}:{key}"),
            Self::Trigger {
                trigger, event_key, ..
            } => format!("trigger:{trigger}:{event_key}"),
        }
    }
}

/// Triggers a rule may name.
pub const TRIGGERS: &[&str] = &["invoice.paid", "message.received", "call.missed"];

/// Entities that carry an activity log.
pub const ENTITY_KINDS: &[&str] = &["contact", "deal", "company"];
