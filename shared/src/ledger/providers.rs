//! SMS carrier integrations' settings live with every integration's (`integrations::sms`).

pub use crate::integrations::sms::*;
