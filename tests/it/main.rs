#![forbid(unsafe_code)]
//! Integration tests: the handlers called in-process against ministack's DynamoDB and SQS, each
//! test with its own table; and end-to-end tests through the stack deployed in ministack.
//! `cargo xtask test` starts ministack and sets `FIRMSPACE_TEST_ENDPOINT`.

mod api;
mod as_booked;
mod assistant;
mod automation;
mod automation_ai;
mod bank;
mod budgets;
mod calls;
mod commands;
mod consequences;
mod credit_notes;
mod currencies;
mod e2e;
mod edge;
mod hostile;
mod keys;
mod leads;
mod ledger;
mod lookalike;
mod messages;
mod monobank;
mod ops;
mod payments;
mod replays;
mod secrets;
mod support;
mod team;
mod webhook;
mod write;
