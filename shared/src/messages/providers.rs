//! Messenger integrations' settings live with every integration's (`integrations::messages`).

pub use crate::integrations::messages::*;
