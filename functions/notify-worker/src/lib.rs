#![forbid(unsafe_code)]
//! Notifications queue → one notification item per recipient, under a conditional key.

use chrono::{DateTime, Utc};
use firmspace::effects::notify;
use firmspace::effects::worker::{Applied, SqsApp, WorkError, Worker};
use firmspace::effects::Notification;
use firmspace::review::Kind;
use firmspace::review::Reason;
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
    type Job = Notification;
    const KIND: Kind = Kind::Notify;

    async fn apply(&self, n: Notification, _now: DateTime<Utc>) -> Result<Applied, WorkError> {
        notify::deliver(&self.store, &n).await?.ok_or_else(|| {
            WorkError::permanent(
                Reason::NoRecipients,
                "the invoice has no owner and the organisation has no members",
            )
        })
    }
}

pub async fn from_env() -> Result<App, firmspace::config::ConfigError> {
    SqsApp::from_env(|_, store| Ok(Notify { store })).await
}
