#![forbid(unsafe_code)]
//! Notifications queue → what tells people of an event: one notification item per recipient
//! and one line in each activity log, each under a conditional key. One message holds all of
//! an event's (`Records`).

use chrono::{DateTime, Utc};
use firmspace::effects::job::Records;
use firmspace::effects::worker::{Applied, SqsApp, WorkError, Worker};
use firmspace::effects::{activity, notify, Consequence, Told};
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

impl Notify {
    async fn tell(&self, told: Told) -> Result<Applied, WorkError> {
        match told {
            Told::Notification(n) => notify::deliver(&self.store, &n).await?.ok_or_else(|| {
                WorkError::permanent(
                    Reason::NoRecipients,
                    "the invoice has no owner and the organisation has no members",
                )
            }),
            Told::Line(line) => Ok(Applied::one(activity::append(&self.store, &line).await?)),
        }
    }
}

impl Worker for Notify {
    type Job = Records;
    const KIND: Kind = Kind::Notify;

    /// Every record, each once: a failure that retrying can help fails the message (what was
    /// applied is absorbed the next time); one that cannot is reported, as that record's, after
    /// the others are applied, so a notification nobody can receive keeps no activity line
    /// from its log, and the others settle while its event waits on it.
    async fn apply(&self, records: Records, _now: DateTime<Utc>) -> Result<Applied, WorkError> {
        let mut applied = Applied::default();
        let mut refused = None;
        for told in records.told() {
            let key = Consequence::from(told.clone()).key();
            match self.tell(told).await {
                Ok(one) => applied = applied.and(one),
                Err(e @ WorkError::Transient(_)) => return Err(e),
                Err(e) => refused = refused.or(Some(e.of_part(key))),
            }
        }
        refused.map_or(Ok(applied), Err)
    }
}

pub async fn from_env() -> Result<App, firmspace::config::ConfigError> {
    SqsApp::from_env(|_, store| Ok(Notify { store })).await
}
