#![forbid(unsafe_code)]
//! Notifications queue → what tells people of an event: one notification item per recipient
//! and one line in each activity log, each under a conditional key. One message holds all of
//! an event's (`Records`).

use chrono::{DateTime, Utc};
use firmspace::effects::job::Records;
use firmspace::effects::told;
use firmspace::effects::worker::{Applied, SqsApp, WorkError, Worker};
use firmspace::review::Kind;
use firmspace::store::Store;

pub struct Notify {
    store: Store,
}

pub type App = SqsApp<Notify>;

pub fn app(store: Store, max_receives: u32) -> App {
    SqsApp::new(
        Notify {
            store: store.clone(),
        },
        store,
        max_receives,
    )
}

impl Worker for Notify {
    type Job = Records;
    const KIND: Kind = Kind::Notify;

    /// Every record, each once (`told::tell_all`): those that cannot be written are reported
    /// as their records' failures (each parked on its own), after the others are written, so
    /// the others settle while their event waits on them.
    async fn apply(&self, records: Records, _now: DateTime<Utc>) -> Result<Applied, WorkError> {
        let (applied, refused) = told::tell_all(&self.store, records.told(), None).await?;
        WorkError::of_parts(refused).map_or(Ok(applied), Err)
    }
}

pub async fn from_env() -> Result<App, firmspace::config::ConfigError> {
    SqsApp::from_env(|_, store| Ok(Notify { store })).await
}
