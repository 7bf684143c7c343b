//! Every operator action carries an `Idempotency-Key`: the first request with a key claims it
//! (a conditional put), runs, and stores its answer on the claim; a repeat gets the stored
//! answer, a repeat while the first still runs is told so, and the same key with another
//! request is refused. A claim whose request died is taken over after a minute.

use crate::store::item::{n, s, Builder, Read};
use crate::store::{Cond, Item, PutNew, Store, StoreError, Update};
use crate::time;
use chrono::{DateTime, Duration, Utc};
use serde_json::Value;

/// How long a claim holds before a later request with the key may take it over.
const HOLD_SECS: i64 = 60;

/// What a key's claim found.
#[derive(Clone, Debug, PartialEq)]
pub enum Claimed {
    /// This request holds the key: run it, then `finish`.
    Run,
    /// The key's request finished: its status and answer.
    Done(u16, Value),
    /// The key's request is still running.
    Running,
    /// The key came with another request.
    Reused,
}

/// One operator's key: who (`admin` or the organisation), the key, and what was asked.
pub struct Request<'a> {
    pub by: &'a str,
    pub key: &'a str,
    /// The method, the path and the body: the same key with another is `Reused`.
    pub fingerprint: String,
}

impl Request<'_> {
    /// Under the organisation's key space, or the admin's own.
    fn pk(&self) -> String {
        let key = crate::ids::key_part(self.key);
        match self.by {
            // Every admin token (two during a rotation) is the one admin.
            admin if admin.starts_with("admin") => format!("ADMIN#OPS_REQUEST#{key}"),
            key_id => format!("KEY#{key_id}#OPS_REQUEST#{key}"),
        }
    }

    pub async fn claim(&self, store: &Store, now: DateTime<Utc>) -> Result<Claimed, StoreError> {
        let until = time::format(now + Duration::seconds(HOLD_SECS));
        let item = Builder::new(&self.pk(), "ops_request", self.by)
            .str("fingerprint", &self.fingerprint)
            .str("until", &until)
            .time("at", now)
            .num("expires_at", (now + crate::store::REQUEST_KEPT).timestamp())
            .build();
        let stored = match store.put_new(item).await? {
            PutNew::Created => return Ok(Claimed::Run),
            PutNew::Existing(stored) => stored,
        };
        self.found(store, &stored, now, &until).await
    }

    async fn found(
        &self,
        store: &Store,
        stored: &Item,
        now: DateTime<Utc>,
        until: &str,
    ) -> Result<Claimed, StoreError> {
        if stored.opt_str("fingerprint") != Some(self.fingerprint.as_str()) {
            return Ok(Claimed::Reused);
        }
        if let (Ok(status), Some(answer)) = (stored.u64_of("status"), stored.opt_str("answer")) {
            let answer = serde_json::from_str(answer).unwrap_or(Value::Null);
            return Ok(Claimed::Done(status as u16, answer));
        }
        // Still running, unless its hold ran out: then this request takes it over.
        let take = Update::new().set("until", s(until)).when(Cond::All(vec![
            Cond::Lacks("status".into()),
            Cond::Before("until".into(), s(time::format(now))),
        ]));
        Ok(if store.update_if(&self.pk(), &take).await? {
            Claimed::Run
        } else {
            Claimed::Running
        })
    }

    /// Gives the key up after a failure a retry may get past (a 5xx): the next request with it
    /// runs at once.
    pub async fn release(&self, store: &Store) -> Result<(), StoreError> {
        let update = Update::new()
            .set("until", s("0000"))
            .when(Cond::Lacks("status".into()));
        store.update_if(&self.pk(), &update).await.map(|_| ())
    }

    /// Stores the answer the request got.
    pub async fn finish(
        &self,
        store: &Store,
        status: u16,
        answer: &Value,
    ) -> Result<(), StoreError> {
        let update = Update::new()
            .set("status", n(status))
            .set("answer", s(answer.to_string()))
            .when(Cond::Exists);
        store.update_if(&self.pk(), &update).await.map(|_| ())
    }
}
