#![forbid(unsafe_code)]
//! The statement import. Its schedule (every 5 minutes in the cloud) imports nothing itself: it
//! walks the monobank bank integrations a page at a time and puts one request per integration on
//! the import queue, so every integration's import is an invocation of its own under its own
//! lease, however many there are; and it counts the integrations whose statement is not imported
//! within two periods (the `imports_overdue` metric, and its alarm). The queue's requests (the
//! schedule's and the API's "import now") are taken by the one worker loop; each is
//! `bank::import::run`: one statement call per window per integration under a lease, rows stored
//! once, the cursor moved after them.

use chrono::{DateTime, Utc};
use firmspace::bank::files::{self, Bucket};
use firmspace::bank::import::{self, Limits, Report, Request, Requests};
use firmspace::config::{parse_var, Config, ConfigError};
use firmspace::effects::worker::{Applied, SqsApp, WorkError, Worker};
use firmspace::egress::Apis;
use firmspace::ids::IntegrationId;
use firmspace::ids::OrgId;
use firmspace::integrations;
use firmspace::review::Kind;
use firmspace::review::Reason;
use firmspace::store::item::Read;
use firmspace::store::{Store, StoreError};
use lambda_runtime::LambdaEvent;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// The schedule's period in the cloud (`rate(5 minutes)`).
pub const PERIOD: Duration = Duration::from_secs(300);

/// One request's work: an integration's statement, or a large file's next steps.
pub struct Importer {
    store: Store,
    apis: Apis,
    limits: Limits,
    /// The import queue: where the schedule fans out, and where a file not done goes on.
    fan_out: Requests,
    /// Where large files wait (`ATTACHMENTS_BUCKET`); without it no file import is taken.
    bucket: Option<Bucket>,
}

/// How long a recovery asks its provider: inside the ops function's wait for the answer.
const RECOVERY_BUDGET: Duration = Duration::from_secs(20);

/// How long a file's steps run in one invocation before the rest goes back on the queue.
const FILE_BUDGET: Duration = Duration::from_secs(30);

impl Importer {
    /// Runs the import of `id` at `now`: its report as JSON, or a store failure (retried).
    async fn one(&self, id: &IntegrationId, now: DateTime<Utc>) -> Result<Value, StoreError> {
        let Some(integration) = integrations::get(&self.store, id).await? else {
            return Ok(json!({"integration": id.digest(), "skipped": "no such integration"}));
        };
        let report: Report =
            match import::run(&self.store, &self.apis, &integration, &self.limits, now).await {
                Ok(report) => report,
                Err(import::ImportError::Store(e)) => return Err(e),
                Err(e) => return Ok(json!({"integration": id.digest(), "skipped": e.to_string()})),
            };
        tracing::info!(integration = %id.digest(), ?report, "statement import");
        metrics::counter!("statement_rows").increment(report.imported as u64);
        Ok(json!({
            "integration": id.digest(), "calls": report.calls, "rows": report.rows,
            "imported": report.imported, "running": report.running,
            "stopped": report.stopped, "caught_up": report.caught_up,
        }))
    }
}

impl Importer {
    /// A large file's steps, [`files::PAGE`] rows each, for up to [`FILE_BUDGET`]; what is left
    /// goes back on the queue as a request of its own. A store or bucket failure is retried.
    async fn file(&self, org: &OrgId, id: &str) -> Result<Applied, WorkError> {
        let Some(mut import) = files::get(&self.store, org, id).await? else {
            return Err(WorkError::Permanent {
                reason: Reason::NoBankRow,
                detail: format!("no file import {id}"),
            });
        };
        let bucket = self.bucket.as_ref().ok_or_else(|| WorkError::Permanent {
            reason: Reason::StoreRefused,
            detail: "no bucket for large files (ATTACHMENTS_BUCKET)".into(),
        })?;
        let started = Instant::now();
        let mut applied = Applied::default();
        while import.state() != "done" && started.elapsed() < FILE_BUDGET {
            let (rows, after) = files::step(&self.store, bucket, &import, 16, Utc::now())
                .await
                .map_err(|e| match e {
                    files::FileError::Store(e) => WorkError::from(e),
                    bucket => WorkError::transient(bucket),
                })?;
            applied.written += rows.imported();
            applied.absorbed += rows.duplicates() + rows.conflicts();
            import = after;
        }
        tracing::info!(import = %import.id, stored = import.stored, rows = import.rows, "file import step");
        if import.state() != "done" {
            let rest = Request::File {
                org: org.clone(),
                import_id: import.id.clone(),
            };
            self.fan_out
                .send(&rest)
                .await
                .map_err(|why| WorkError::transient(std::io::Error::other(why)))?;
        }
        Ok(applied)
    }
}

impl Importer {
    /// An organisation's turn: its integrations one after another from where its last turn
    /// stopped, while the invocation has time for one more; the place is kept for the next.
    async fn turn(&self, org: &OrgId, deadline: Instant) -> Result<Applied, WorkError> {
        let place = org.pk("BANK_IMPORT_TURN");
        let after = self.store.get(&place).await?;
        let after = after.as_ref().and_then(|i| i.opt_str("after"));
        let mut ids = import::of_org(&self.store, org, after, 100).await?;
        if ids.is_empty() && after.is_some() {
            ids = import::of_org(&self.store, org, None, 100).await?;
        }
        let mut applied = Applied::default();
        for id in &ids {
            if deadline.saturating_duration_since(Instant::now()) < TURN_STEP {
                break;
            }
            let report = self.one(id, Utc::now()).await?;
            // Its token's one call a minute is another integration's now (two accounts of one
            // token): the turn stops here, its place before this one, so the next turn begins
            // with it rather than with the one that took the minute again.
            if report["running"].as_bool() == Some(true) {
                break;
            }
            let imported = report["imported"].as_u64().unwrap_or(0) as usize;
            let rows = report["rows"].as_u64().unwrap_or(0) as usize;
            applied = applied.and(Applied {
                written: imported,
                absorbed: rows.saturating_sub(imported),
            });
            let kept =
                firmspace::store::item::Builder::new(&place, "bank_import_turn", org.as_str())
                    .str("after", &id.id)
                    .build();
            self.store.replace(kept).await?;
        }
        Ok(applied)
    }
}

/// The time one integration's import may take inside a turn.
const TURN_STEP: Duration = Duration::from_secs(10);

impl Worker for Importer {
    type Job = Request;
    const KIND: Kind = Kind::Bank;

    /// A turn with the invocation's deadline; everything else as `apply`.
    async fn apply_until(
        &self,
        job: Request,
        now: DateTime<Utc>,
        deadline: Instant,
    ) -> Result<Applied, WorkError> {
        match job {
            Request::Turn { org } => self.turn(&org, deadline).await,
            other => self.apply(other, now).await,
        }
    }

    /// A statement import (a store failure is retried), or a large file's next steps.
    async fn apply(&self, job: Request, now: DateTime<Utc>) -> Result<Applied, WorkError> {
        let integration_id = match job {
            Request::Statement { integration_id } => integration_id,
            Request::File { org, import_id } => return self.file(&org, &import_id).await,
            Request::Turn { org } => {
                let deadline = Instant::now() + Duration::from_secs(40);
                return self.turn(&org, deadline).await;
            }
        };
        // The lease is real time: a request later in the batch starts when it starts.
        let report = self.one(&integration_id, Utc::now().max(now)).await?;
        let imported = report["imported"].as_u64().unwrap_or(0) as usize;
        let rows = report["rows"].as_u64().unwrap_or(0) as usize;
        Ok(Applied {
            written: imported,
            absorbed: rows.saturating_sub(imported),
        })
    }
}

pub struct App {
    requests: SqsApp<Importer>,
    /// The schedule's period: an integration not imported within two is overdue.
    period: Duration,
}

impl App {
    pub fn new(
        store: Store,
        apis: Apis,
        limits: Limits,
        fan_out: Requests,
        bucket: Option<Bucket>,
    ) -> Self {
        let importer = Importer {
            store: store.clone(),
            apis,
            limits,
            fan_out,
            bucket,
        };
        Self {
            requests: SqsApp::new(importer, store, 5),
            period: PERIOD,
        }
    }

    /// `STATEMENT_INTERVAL_MS` (monobank's 60000; less only on the local and test stages),
    /// `IMPORT_MAX_WAIT_MS` (how long a run waits for the next window, default 0: the next run
    /// reads on), `MONOBANK_PERSONAL_API_URL`, `IMPORT_QUEUE_URL` (where the schedule fans out),
    /// `FILE_QUEUE_URL` (a large file's next steps),
    /// `IMPORT_PERIOD_SECS` (the schedule's period, 300), and the worker loop's
    /// `MAX_RECEIVE_COUNT`.
    pub async fn from_env() -> Result<Self, ConfigError> {
        let config = Config::from_env()?;
        let asked = parse_var("STATEMENT_INTERVAL_MS", 60_000u64)?;
        let interval = match config.allows_loopback() {
            true => asked,
            false => asked.max(60_000),
        };
        let limits = Limits {
            interval: Duration::from_millis(interval),
            max_wait: Duration::from_millis(parse_var("IMPORT_MAX_WAIT_MS", 0u64)?),
            max_pages: 20,
        };
        let endpoint = config.endpoint_url.as_deref();
        let fan_out = Requests {
            sqs: firmspace::aws::sqs(endpoint).await,
            queue_url: firmspace::config::require("IMPORT_QUEUE_URL")?,
            files_queue_url: firmspace::config::require("FILE_QUEUE_URL")?,
        };
        let bucket = match firmspace::config::var("ATTACHMENTS_BUCKET") {
            Some(name) => {
                let sdk = firmspace::aws::sdk_config(endpoint).await;
                let s3 = firmspace::aws::s3(&sdk, endpoint.is_some());
                Some(Bucket { s3, name })
            }
            None => None,
        };
        let store = config.store().await;
        let importer = Importer {
            store: store.clone(),
            apis: Apis::from_env(config.allows_loopback())?,
            limits,
            fan_out,
            bucket,
        };
        let max_receives = parse_var("MAX_RECEIVE_COUNT", 5)?;
        let period = Duration::from_secs(parse_var("IMPORT_PERIOD_SECS", PERIOD.as_secs())?);
        Ok(Self {
            requests: SqsApp::new(importer, store, max_receives),
            period,
        })
    }

    /// A scheduled event runs every integration; an SQS event the requests it carries.
    pub async fn handle(&self, event: LambdaEvent<Value>) -> Result<Value, lambda_runtime::Error> {
        let answer = self.process(&event.payload).await;
        firmspace::telemetry::flush_metrics();
        answer
    }

    pub async fn process(&self, event: &Value) -> Result<Value, lambda_runtime::Error> {
        // The ops function's recovery of a window (this function opens the provider's key).
        if let Some(ask) = firmspace::ops::recover::Ask::of(event) {
            let worker = &self.requests.worker;
            let deadline = Instant::now() + RECOVERY_BUDGET;
            let answer = firmspace::ops::recover::run(
                &worker.store,
                (&worker.apis, &worker.limits),
                &ask,
                Utc::now(),
                deadline,
            )
            .await?;
            return Ok(answer);
        }
        if event.get("Records").is_some() {
            let batch = serde_json::from_value(event.clone())?;
            let deadline = Instant::now() + Duration::from_secs(50);
            let answer = self
                .requests
                .process_until(batch, Utc::now(), deadline)
                .await;
            return Ok(serde_json::to_value(answer)?);
        }
        self.scheduled(Utc::now()).await
    }

    /// The schedule: one import request per monobank integration on the queue, a page of
    /// integrations at a time, and the count of those not imported within two periods. A failure
    /// fails the run (the schedule tries again; a request sent twice meets its lease).
    async fn scheduled(&self, now: DateTime<Utc>) -> Result<Value, lambda_runtime::Error> {
        let store = &self.requests.worker.store;
        // A person paused the import worker: its queue takes nothing more until it resumes (the
        // overdue are still counted, so the alarm tells how long it has been).
        let paused = firmspace::ops::consumers::is_paused(store, "bank-import").await?;
        if paused {
            tracing::info!("the import worker is paused: nothing queued");
        }
        let (mut queued, mut overdue, mut cursor) = (0, Vec::new(), None);
        let mut turned = std::collections::HashSet::new();
        loop {
            let (page, next) = import::scheduled(store, cursor.as_deref()).await?;
            // One turn per organisation, sent as its first integration is read.
            let orgs: Vec<OrgId> = page
                .iter()
                .map(|(id, _)| id.org.clone())
                .filter(|org| turned.insert(org.clone()))
                .collect();
            if !paused {
                self.requests.worker.fan_out.send_turns(&orgs).await?;
                queued += page.len();
            }
            overdue.extend(import::overdue(store, &page, self.period, now).await?);
            // Told per page: a run cut off before the list's end still says what it saw.
            metrics::gauge!("imports_overdue").set(overdue.len() as f64);
            firmspace::telemetry::flush_metrics();
            match next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        for id in &overdue {
            tracing::warn!(integration = %id.digest(), "statement not imported within two periods");
        }
        metrics::gauge!("imports_overdue").set(overdue.len() as f64);
        Ok(json!({ "queued": queued, "overdue": overdue.len(), "worker_paused": paused }))
    }
}
