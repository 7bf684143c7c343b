//! Bank integrations' settings live with every integration's (`integrations::bank`).

pub use crate::integrations::bank::*;
