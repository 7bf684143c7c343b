#![forbid(unsafe_code)]
//! Firmspace Events: the rules and adapters every Lambda function shares.
//!
//! The same event may arrive many times; its effect happens once. Each domain module holds its
//! pure rules beside the store code that turns a decision into one conditional write; `webhook`
//! is the one edge every event source plugs into, `effects::worker` the one SQS loop.

pub mod admin;
pub mod aws;
pub mod bank;
pub mod calls;
pub mod commands;
pub mod config;
pub mod consequences;
pub mod contacts;
pub mod deals;
pub mod delivery;
pub mod effects;
pub mod egress;
pub mod fields;
pub mod http;
pub mod ids;
pub mod integrations;
pub mod leads;
pub mod ledger;
pub mod messages;
pub mod money;
pub mod ops;
pub mod orgs;
pub mod payments;
pub mod review;
pub mod serve;
pub mod signature;
pub mod store;
pub mod telemetry;
pub mod time;
pub mod vault;
pub mod webhook;

pub use chrono::{DateTime, Utc};
