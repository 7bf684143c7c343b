//! The one SQS batch loop every worker runs (the runtime's `advanced-sqs-partial-batch-failures`
//! example is the model): each message is read into the worker's typed job, applied at the
//! batch's `now`, and only failed message ids are reported back. A permanent failure is
//! acknowledged and parked as a review item; the last failing receive of a message records a
//! `dead_letter` review item before SQS moves it to the DLQ. A worker crate keeps only `apply`.

pub use super::job::{Applied, Job, Settles, Unread};
use crate::config::{parse_var, Config, ConfigError};
use crate::ids::OrgId;
use crate::review::{Kind, Reason, ReviewItem};
use crate::store::{Store, StoreError};
use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent, SqsMessage};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use std::error::Error as StdError;
use std::future::Future;
use std::time::{Duration, Instant};
use thiserror::Error;
use tracing::Instrument;

#[derive(Debug, Error)]
pub enum WorkError {
    /// Retrying can help (a store or network failure).
    #[error("transient: {0}")]
    Transient(#[source] Box<dyn StdError + Send + Sync>),
    /// Retrying cannot help; a person has to look. `reason` names the review item.
    #[error("permanent ({reason}): {detail}")]
    Permanent { reason: Reason, detail: String },
    /// Retrying cannot help some parts of the job, each a consequence of its own, and a person
    /// has to look at each; every other part of it was applied.
    #[error("permanent for {} part(s), the first {}", .0.len(), .0.first().map_or("", |p| p.key.as_str()))]
    PermanentParts(Vec<Part>),
}

/// A part of a job that failed for good: its consequence's key, why, and what happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part {
    pub key: String,
    pub reason: Reason,
    pub detail: String,
}

impl WorkError {
    pub fn transient(err: impl StdError + Send + Sync + 'static) -> Self {
        Self::Transient(Box::new(err))
    }

    pub fn permanent(reason: Reason, detail: impl Into<String>) -> Self {
        Self::Permanent {
            reason,
            detail: detail.into(),
        }
    }

    /// The failures of some parts of a job (each with its consequence's key), as one failure:
    /// of those parts when each is permanent; the whole job's to retry when one is not (a retry
    /// can help it, and the parts applied are absorbed by their keys then). `None` when there
    /// is none.
    pub fn of_parts(failed: Vec<(String, WorkError)>) -> Option<Self> {
        let mut parts = Vec::with_capacity(failed.len());
        for (key, err) in failed {
            match err {
                Self::Permanent { reason, detail } => parts.push(Part {
                    key,
                    reason,
                    detail,
                }),
                Self::PermanentParts(more) => parts.extend(more),
                transient @ Self::Transient(_) => return Some(transient),
            }
        }
        (!parts.is_empty()).then_some(Self::PermanentParts(parts))
    }
}

impl From<StoreError> for WorkError {
    fn from(err: StoreError) -> Self {
        if err.is_retryable() {
            Self::transient(err)
        } else {
            Self::permanent(Reason::StoreRefused, err.to_string())
        }
    }
}

/// What a worker does with one message of its queue.
pub trait Worker: Send + Sync {
    /// The typed message of this worker's queue.
    type Job: Job;
    /// What the worker's review items are about; its name in logs and metrics.
    const KIND: Kind;
    const NAME: &'static str = Self::KIND.name();
    /// The time one message may take: a batch stops taking messages when less is left, and
    /// reports the rest as failed (they come back; nothing is done twice).
    const NEEDS: Duration = Duration::from_secs(3);

    fn apply(
        &self,
        job: Self::Job,
        now: DateTime<Utc>,
    ) -> impl Future<Output = Result<Applied, WorkError>> + Send;

    /// `apply`, for a worker whose steps must fit before the invocation's `deadline` (one that
    /// calls out and must not be cut off mid-call); the others ignore it.
    fn apply_until(
        &self,
        job: Self::Job,
        now: DateTime<Utc>,
        deadline: Instant,
    ) -> impl Future<Output = Result<Applied, WorkError>> + Send {
        let _ = deadline;
        self.apply(job, now)
    }
}

/// Organisation-less problems (a message whose organisation cannot be read) are filed here.
pub fn operator_org() -> OrgId {
    OrgId::parse("o000000000000").expect("valid literal")
}

fn receive_count(msg: &SqsMessage) -> u32 {
    msg.attributes
        .get("ApproximateReceiveCount")
        .and_then(|c| c.parse().ok())
        .unwrap_or(1)
}

/// A worker with what every worker needs: the store for review items and the queue's
/// `maxReceiveCount`.
pub struct SqsApp<W> {
    pub worker: W,
    store: Store,
    max_receives: u32,
    /// What the batches cost, per organisation and kind of event (`store::spent`).
    spent: crate::store::spent::Spent,
}

impl<W: Worker> SqsApp<W> {
    pub fn new(worker: W, store: Store, max_receives: u32) -> Self {
        Self {
            worker,
            store,
            max_receives,
            spent: Default::default(),
        }
    }

    /// Reads the common configuration (`TABLE_NAME`, `MAX_RECEIVE_COUNT`, default 5) and lets
    /// `build` make the worker from it and from what only that worker reads.
    pub async fn from_env(
        build: impl FnOnce(&Config, Store) -> Result<W, ConfigError>,
    ) -> Result<Self, ConfigError> {
        let config = Config::from_env()?;
        let max_receives = parse_var("MAX_RECEIVE_COUNT", 5)?;
        let store = config.store().await;
        Ok(Self::new(
            build(&config, store.clone())?,
            store,
            max_receives,
        ))
    }

    /// The Lambda entry point: the batch at the time it arrived.
    pub async fn handle(
        &self,
        event: lambda_runtime::LambdaEvent<SqsEvent>,
    ) -> Result<SqsBatchResponse, lambda_runtime::Error> {
        let left = event
            .context
            .deadline()
            .duration_since(std::time::SystemTime::now())
            .unwrap_or_default();
        let response = self
            .process_until(event.payload, Utc::now(), Instant::now() + left)
            .await;
        crate::telemetry::flush_metrics();
        Ok(response)
    }

    /// Applies every message of the batch (one after another) and reports the failures.
    pub async fn process(&self, event: SqsEvent, now: DateTime<Utc>) -> SqsBatchResponse {
        let unbounded = Instant::now() + Duration::from_secs(24 * 3600);
        self.process_until(event, now, unbounded).await
    }

    /// `process` within an invocation that ends at `deadline`.
    pub async fn process_until(
        &self,
        event: SqsEvent,
        now: DateTime<Utc>,
        deadline: Instant,
    ) -> SqsBatchResponse {
        let mut response = SqsBatchResponse::default();
        // A consequence's cost is its event's: the kind of the item it comes from.
        let about: Vec<_> = event
            .records
            .iter()
            .filter_map(|msg| {
                let source = super::queue::source_of(msg.body.as_deref()?)?;
                let org = crate::store::spent::org_of_pk(&source)?;
                Some((org, crate::store::spent::kind_of_pk(&source)?))
            })
            .collect();
        for msg in event.records {
            // Too little time left for one more: it (and the rest) comes back, untouched, rather
            // than the invocation timing out and every message coming back, done or not.
            let left = deadline.saturating_duration_since(Instant::now());
            let done = match left < W::NEEDS {
                true => self.out_of_time(&msg, now).await,
                false => self.one(&msg, now, deadline).await,
            };
            if done.is_err() {
                let mut failure = BatchItemFailure::default();
                failure.item_identifier = msg.message_id.clone().unwrap_or_default();
                response.batch_item_failures.push(failure);
            }
        }
        self.spent.invocation(&self.store, 0, &about, now);
        self.spent.flush_due(&self.store).await;
        response
    }

    async fn one(&self, msg: &SqsMessage, now: DateTime<Utc>, deadline: Instant) -> Result<(), ()> {
        let id = msg.message_id.as_deref().unwrap_or_default();
        let body = msg.body.as_deref().unwrap_or_default();
        let job = match W::Job::read(body) {
            Ok(job) => job,
            Err(Unread::Malformed(e)) => {
                let detail =
                    json!({"error": e, "body": body.chars().take(2000).collect::<String>()});
                return self.unreadable(id, body, detail, now).await;
            }
            Err(Unread::Elsewhere { org, key }) => {
                let err = WorkError::permanent(
                    Reason::WrongQueue,
                    format!("{key} is not for {}", W::NAME),
                );
                return self.failed(msg, &org, key, err, now).await;
            }
        };
        let (org, key) = job.about();
        let settles = job.settles();
        let span = tracing::info_span!("job", worker = W::NAME, key = %key);
        match self
            .worker
            .apply_until(job, now, deadline)
            .instrument(span)
            .await
        {
            Ok(applied) => {
                metrics::counter!("effects", "worker" => W::NAME, "result" => "written")
                    .increment(applied.written as u64);
                metrics::counter!("effects", "worker" => W::NAME, "result" => "absorbed")
                    .increment(applied.absorbed as u64);
                tracing::info!(key = %key, written = applied.written, absorbed = applied.absorbed, "applied");
                self.settle(msg, settles, (&org, key), now).await
            }
            Err(err) => {
                // One part failed for good: the others happened, and settle.
                let rest = match &err {
                    WorkError::PermanentParts(parts) => {
                        let failed: Vec<&str> = parts.iter().map(|p| p.key.as_str()).collect();
                        Some(settles.without(&failed))
                    }
                    _ => None,
                };
                self.failed(msg, &org, key.clone(), err, now).await?;
                match rest {
                    Some(rest) => self.settle(msg, rest, (&org, key), now).await,
                    None => Ok(()),
                }
            }
        }
    }

    /// After a job's consequences happened (or were found done): the event they came from
    /// stops waiting on them, and waits no more when they were its last. A failure here is
    /// retried with the message, which is absorbed then.
    async fn settle(
        &self,
        msg: &SqsMessage,
        settles: Settles,
        (org, key): (&OrgId, String),
        now: DateTime<Utc>,
    ) -> Result<(), ()> {
        let Some(source) = msg.body.as_deref().and_then(super::queue::source_of) else {
            return Ok(());
        };
        let settled = match settles {
            Settles::Keys(keys) => super::waiting::settle(&self.store, &source, &keys).await,
            Settles::Nothing => return Ok(()),
        };
        match settled {
            Ok(_) => Ok(()),
            Err(e) => {
                let err = WorkError::transient(e);
                self.failed(msg, org, key, err, now).await
            }
        }
    }

    /// A permanent failure is parked and acknowledged; a transient one is retried, and its last
    /// receive files `dead_letter`.
    async fn failed(
        &self,
        msg: &SqsMessage,
        org: &OrgId,
        key: String,
        err: WorkError,
        now: DateTime<Utc>,
    ) -> Result<(), ()> {
        match err {
            WorkError::Permanent { reason, detail } => {
                self.parked(org, key, (reason, detail), now).await
            }
            // Each parked under the part that failed.
            WorkError::PermanentParts(parts) => {
                for Part {
                    key,
                    reason,
                    detail,
                } in parts
                {
                    self.parked(org, key, (reason, detail), now).await?;
                }
                Ok(())
            }
            WorkError::Transient(_) => {
                tracing::error!(%key, error.message = %err, error.cause_chain = ?err, "transient failure");
                metrics::counter!("effects", "worker" => W::NAME, "result" => "retried")
                    .increment(1);
                let receives = receive_count(msg);
                if receives >= self.max_receives {
                    let detail = json!({"error": err.to_string(), "message_id": msg.message_id, "receives": receives});
                    let _ = self.park(org, key, Reason::DeadLetter, detail, now).await;
                }
                Err(())
            }
        }
    }

    /// A message left for lack of time comes back, untouched; on its last receive it is filed
    /// `dead_letter` first, as a retried one is (its queue moves it to the DLQ next).
    async fn out_of_time(&self, msg: &SqsMessage, now: DateTime<Utc>) -> Result<(), ()> {
        let receives = receive_count(msg);
        if receives < self.max_receives {
            return Err(());
        }
        if let Ok(job) = W::Job::read(msg.body.as_deref().unwrap_or_default()) {
            let (org, key) = job.about();
            let detail = json!({"error": "no time was left for it in its invocation", "message_id": msg.message_id, "receives": receives});
            let _ = self.park(&org, key, Reason::DeadLetter, detail, now).await;
        }
        Err(())
    }

    /// A permanent failure parked for a person, and the message acknowledged.
    async fn parked(
        &self,
        org: &OrgId,
        key: String,
        (reason, detail): (Reason, String),
        now: DateTime<Utc>,
    ) -> Result<(), ()> {
        tracing::warn!(%key, %reason, %detail, "permanent failure; parked for review");
        metrics::counter!("effects", "worker" => W::NAME, "result" => "parked").increment(1);
        self.park(org, key, reason, json!({"error": detail}), now)
            .await
    }

    async fn unreadable(
        &self,
        id: &str,
        body: &str,
        detail: Value,
        now: DateTime<Utc>,
    ) -> Result<(), ()> {
        tracing::warn!(message_id = %id, "unreadable message; parked for review");
        let org = serde_json::from_str::<Value>(body)
            .ok()
            .and_then(|v| v["org"].as_str().and_then(|o| OrgId::parse(o).ok()))
            .unwrap_or_else(operator_org);
        self.park(
            &org,
            format!("message:{id}"),
            Reason::MalformedMessage,
            detail,
            now,
        )
        .await
    }

    async fn park(
        &self,
        org: &OrgId,
        key: String,
        reason: Reason,
        detail: Value,
        now: DateTime<Utc>,
    ) -> Result<(), ()> {
        let review = ReviewItem {
            org: org.clone(),
            kind: W::KIND,
            reason,
            key,
            at: now,
            detail,
        };
        review.put(&self.store).await.map(|_| ()).map_err(|e| {
            tracing::error!(error.message = %e, error.cause_chain = ?e, "could not park the message");
        })
    }
}
