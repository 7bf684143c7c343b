//! Consequences of stored events: notifications, activity-log lines, automation runs. The stream
//! fan-out derives them from the stored item alone (no dual write); each worker writes with its
//! own conditional key, so a redelivered message is a no-op.
//!
//! A message is typed when it is read off the queue: organisation, entity kind, trigger and time
//! are parsed there once, and a worker's `apply` never sees raw strings for them.

pub mod activity;
pub mod automation;
pub mod bounds;
pub mod derive;
pub mod job;
pub mod kept;
pub mod lookalike;
pub mod notify;
pub mod queue;
pub mod replies;
pub mod runs;
pub mod told;
pub mod waiting;
pub mod worker;

/// Automation's outbound calls and their guard, where every outbound call lives.
pub use crate::egress::{outbound, targets};

pub use crate::consequences::*;
