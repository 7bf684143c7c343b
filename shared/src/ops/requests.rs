//! Every operator action carries an `Idempotency-Key`: the first request with a key claims it
//! (a conditional put), runs, and stores its answer on the claim; a repeat gets the stored
//! answer, a repeat while the first still runs is told so, and the same key with another
//! request is refused. A claim whose request died is taken over after a minute.

use crate::http::{header, ApiError};
use crate::store::item::{n, s, Builder, Read};
use crate::store::{Cond, Item, PutNew, Store, StoreError, Update};
use crate::time;
use chrono::{DateTime, Duration, Utc};
use lambda_http::Body;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::future::Future;

/// The request's `Idempotency-Key`: 1 to 255 visible ASCII characters, or 400.
pub fn key_of(req: &lambda_http::Request) -> Result<String, ApiError> {
    let raw = header(req, "idempotency-key").ok_or_else(|| {
        ApiError::bad_request(
            "missing_idempotency_key",
            "Idempotency-Key header is required",
        )
    })?;
    let visible = !raw.is_empty() && raw.len() <= 255 && raw.bytes().all(|b| b.is_ascii_graphic());
    if !visible {
        return Err(ApiError::bad_request(
            "invalid_idempotency_key",
            "Idempotency-Key is 1 to 255 visible ASCII characters",
        ));
    }
    Ok(raw.to_owned())
}

/// What a request asked, for its claim: the route's segments and the body, digested.
pub fn fingerprint(route: &str, body: &[u8]) -> String {
    let mut digest = Sha256::new();
    digest.update(route);
    digest.update([0]);
    digest.update(body);
    hex::encode(digest.finalize())
}

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
    /// Keys shared by every API key of this organisation (an assistant's `call_id`); `None`:
    /// each API key's own.
    pub shared: Option<&'a crate::ids::OrgId>,
    pub key: &'a str,
    /// The method, the path and the body: the same key with another is `Reused`.
    pub fingerprint: String,
}

impl Request<'_> {
    /// Under the organisation's key space, or the admin's own.
    fn pk(&self) -> String {
        let key = crate::ids::key_part(self.key);
        if let Some(org) = self.shared {
            return org.pk(&format!("REQUEST#{key}"));
        }
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

    /// Runs `run` once under this request's key: a repeat gets the stored status and answer, a
    /// repeat while the first runs is 409 `request_in_progress`, the key with another request
    /// 409 `idempotency_key_reused`. A refusal (4xx) is the answer too and is stored; a failure
    /// a retry may get past (5xx) gives the key up.
    pub async fn once<F, Fut>(
        &self,
        store: &Store,
        now: DateTime<Utc>,
        run: F,
    ) -> Result<(u16, Value), ApiError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<(u16, Value), ApiError>>,
    {
        let (status, answer, _) = self.once_telling(store, now, run).await?;
        Ok((status, answer))
    }

    /// [`Request::once`], telling whether the answer is a repeat's (the stored one).
    pub async fn once_telling<F, Fut>(
        &self,
        store: &Store,
        now: DateTime<Utc>,
        run: F,
    ) -> Result<(u16, Value, bool), ApiError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<(u16, Value), ApiError>>,
    {
        match self.claim(store, now).await? {
            Claimed::Run => {}
            Claimed::Done(status, answer) => return Ok((status, answer, true)),
            Claimed::Running => {
                return Err(ApiError::new(
                    409,
                    "request_in_progress",
                    "a request with this Idempotency-Key is running; ask again in a moment",
                ))
            }
            Claimed::Reused => {
                return Err(ApiError::new(
                    409,
                    "idempotency_key_reused",
                    "this Idempotency-Key was used with another request",
                ))
            }
        }
        let (status, answer) = match run().await {
            Ok(done) => done,
            Err(e) if e.status < 500 => {
                let refused = e.into_response();
                let body: Value = match refused.body() {
                    Body::Text(text) => serde_json::from_str(text).unwrap_or(Value::Null),
                    _ => Value::Null,
                };
                (refused.status().as_u16(), body)
            }
            Err(e) => {
                self.release(store).await?;
                return Err(e);
            }
        };
        self.finish(store, status, &answer).await?;
        Ok((status, answer, false))
    }

    /// Gives the key up after a failure a retry may get past (a 5xx): the next request with it
    /// runs at once.
    pub async fn release(&self, store: &Store) -> Result<(), StoreError> {
        let update = Update::new()
            .set("until", s("0000"))
            .when(Cond::Lacks("status".into()));
        store.update_if(&self.pk(), &update).await.map(|_| ())
    }

    /// Keeps the answer of a request whose effect claimed its key itself (a payment, a credit
    /// note, a top-up, a void under an `Idempotency-Key`), so [`Request::look_up`] finds it too. A
    /// request cut off between its effect and this finds nothing: sent again under its key, it
    /// is answered from the effect, and nothing happens twice.
    pub async fn remember(
        &self,
        store: &Store,
        (status, answer): (u16, &Value),
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let item = Builder::new(&self.pk(), "ops_request", self.by)
            .str("fingerprint", &self.fingerprint)
            .str("until", "0000")
            .time("at", now)
            .num("expires_at", (now + crate::store::REQUEST_KEPT).timestamp())
            .num("status", status)
            .str("answer", answer.to_string())
            .build();
        // The first answer stays: a repeat's (`duplicate: true`) does not replace it.
        store.put_new(item).await.map(drop)
    }

    /// What became of the request sent under this key (`by`, `shared` and `key` name it; the
    /// fingerprint is not read): `done` with its status and answer, or `running` while it runs;
    /// `None` when none arrived (or its record expired).
    pub async fn look_up(&self, store: &Store) -> Result<Option<RequestOutcome>, StoreError> {
        let Some(item) = store.get(&self.pk()).await? else {
            return Ok(None);
        };
        let (state, status, answer) = match (item.u64_of("status"), item.opt_str("answer")) {
            (Ok(status), Some(answer)) => (
                "done",
                Some(status),
                Some(serde_json::from_str(answer).unwrap_or(Value::Null)),
            ),
            _ => ("running", None, None),
        };
        Ok(Some(RequestOutcome {
            key: self.key.to_owned(),
            state,
            status,
            answer,
            at: item.opt_str("at").map(str::to_owned),
        }))
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

/// What became of a request, asked by its key: `running`, or `done` with what it was answered.
#[derive(Clone, Debug, serde::Serialize, utoipa::ToSchema)]
pub struct RequestOutcome {
    pub key: String,
    /// `running` or `done`.
    #[schema(example = "done")]
    pub state: &'static str,
    /// `done`: the HTTP status the request was answered with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u64>,
    /// `done`: the answer's body (null if the stored one cannot be read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<Value>,
    pub at: Option<String>,
}
