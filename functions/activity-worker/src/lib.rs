#![forbid(unsafe_code)]
//! Activity queue → an entry in a contact, deal or company log, appended once per key.

use chrono::{DateTime, Utc};
use firmspace::effects::activity;
use firmspace::effects::worker::{Applied, SqsApp, WorkError, Worker};
use firmspace::effects::ActivityLine;
use firmspace::review::Kind;
use firmspace::store::Store;

pub struct Activity {
    store: Store,
}

pub type App = SqsApp<Activity>;

pub fn app(store: Store, max_receives: u32) -> App {
    SqsApp::new(
        Activity {
            store: store.clone(),
        },
        store,
        max_receives,
    )
}

impl Worker for Activity {
    type Job = ActivityLine;
    const KIND: Kind = Kind::Activity;

    async fn apply(&self, line: ActivityLine, _now: DateTime<Utc>) -> Result<Applied, WorkError> {
        Ok(Applied::one(activity::append(&self.store, &line).await?))
    }
}

pub async fn from_env() -> Result<App, firmspace::config::ConfigError> {
    SqsApp::from_env(|_, store| Ok(Activity { store })).await
}
