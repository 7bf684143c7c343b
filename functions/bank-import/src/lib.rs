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
use firmspace::bank::import::{self, Limits, Report, Request, Requests};
use firmspace::config::{parse_var, Config, ConfigError};
use firmspace::effects::worker::{Applied, SqsApp, WorkError, Worker};
use firmspace::egress::Apis;
use firmspace::ids::IntegrationId;
use firmspace::integrations;
use firmspace::review::Kind;
use firmspace::store::{Store, StoreError};
use lambda_runtime::LambdaEvent;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// The schedule's period in the cloud (`rate(5 minutes)`).
pub const PERIOD: Duration = Duration::from_secs(300);

/// One integration's import, for the schedule and for the queue alike.
pub struct Importer {
    store: Store,
    apis: Apis,
    limits: Limits,
}

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

impl Worker for Importer {
    type Job = Request;
    const KIND: Kind = Kind::Bank;

    /// A request from the API: its integration's import now. A store failure is retried.
    async fn apply(&self, job: Request, now: DateTime<Utc>) -> Result<Applied, WorkError> {
        // The lease is real time: a request later in the batch starts when it starts.
        let report = self.one(&job.integration_id, Utc::now().max(now)).await?;
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
    /// Where the schedule puts one request per integration.
    fan_out: Requests,
    /// The schedule's period: an integration not imported within two is overdue.
    period: Duration,
}

impl App {
    pub fn new(store: Store, apis: Apis, limits: Limits, fan_out: Requests) -> Self {
        let importer = Importer {
            store: store.clone(),
            apis,
            limits,
        };
        Self {
            requests: SqsApp::new(importer, store, 5),
            fan_out,
            period: PERIOD,
        }
    }

    /// `STATEMENT_INTERVAL_MS` (monobank's 60000; less only on the local and test stages),
    /// `IMPORT_MAX_WAIT_MS` (how long a run waits for the next window, default 0: the next run
    /// reads on), `MONOBANK_PERSONAL_API_URL`, `IMPORT_QUEUE_URL` (where the schedule fans out),
    /// `IMPORT_PERIOD_SECS` (the schedule's period, 300), and the worker loop's
    /// `MAX_RECEIVE_COUNT`.
    pub async fn from_env() -> Result<Self, ConfigError> {
        let queue_url = firmspace::config::require("IMPORT_QUEUE_URL")?;
        let requests = SqsApp::from_env(|config: &Config, store| {
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
            let apis = Apis::from_env(config.allows_loopback())?;
            Ok(Importer {
                store,
                apis,
                limits,
            })
        })
        .await?;
        let endpoint = firmspace::config::var("AWS_ENDPOINT_URL");
        let fan_out = Requests {
            sqs: firmspace::aws::sqs(endpoint.as_deref()).await,
            queue_url,
        };
        let period = Duration::from_secs(parse_var("IMPORT_PERIOD_SECS", PERIOD.as_secs())?);
        Ok(Self {
            requests,
            fan_out,
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
        let (mut queued, mut overdue, mut cursor) = (0, Vec::new(), None);
        loop {
            let (page, next) = import::scheduled(store, cursor.as_deref()).await?;
            let ids: Vec<IntegrationId> = page.iter().map(|(id, _)| id.clone()).collect();
            self.fan_out.send_all(&ids).await?;
            queued += ids.len();
            overdue.extend(import::overdue(store, &page, self.period, now).await?);
            match next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        for id in &overdue {
            tracing::warn!(integration = %id.digest(), "statement not imported within two periods");
        }
        metrics::gauge!("imports_overdue").set(overdue.len() as f64);
        Ok(json!({ "queued": queued, "overdue": overdue.len() }))
    }
}
