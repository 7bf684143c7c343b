#![forbid(unsafe_code)]
//! The statement import: on its schedule (every 5 minutes in the cloud) for every monobank bank
//! integration, and at once for an integration the API asked for (a typed request on the import
//! queue, taken by the one worker loop). Each run is `bank::import::run`: one statement call per
//! window per integration under a lease, rows stored once, the cursor moved after them.

use chrono::{DateTime, Utc};
use firmspace::bank::import::{self, Limits, Report, Request};
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
}

impl App {
    pub fn new(store: Store, apis: Apis, limits: Limits) -> Self {
        let importer = Importer {
            store: store.clone(),
            apis,
            limits,
        };
        Self {
            requests: SqsApp::new(importer, store, 5),
        }
    }

    /// `STATEMENT_INTERVAL_MS` (monobank's 60000; less only on the local and test stages),
    /// `IMPORT_MAX_WAIT_MS` (how long a run waits for the next window, default 0: the next run
    /// reads on), `MONOBANK_PERSONAL_API_URL`, and the worker loop's `MAX_RECEIVE_COUNT`.
    pub async fn from_env() -> Result<Self, ConfigError> {
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
        Ok(Self { requests })
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
        self.scheduled().await
    }

    /// Every monobank integration in turn; one integration's failure is its own. No new one
    /// starts in the last 20 s of the function's minute: the next schedule takes it.
    async fn scheduled(&self) -> Result<Value, lambda_runtime::Error> {
        let importer = &self.requests.worker;
        let ids = import::scheduled(&importer.store).await?;
        let started = Instant::now();
        let mut reports = Vec::new();
        for id in ids {
            if started.elapsed() > Duration::from_secs(40) {
                reports
                    .push(json!({"integration": id.digest(), "skipped": "left for the next run"}));
                continue;
            }
            match importer.one(&id, Utc::now()).await {
                Ok(report) => reports.push(report),
                Err(e) => {
                    tracing::warn!(integration = %id.digest(), error = %e, "statement import failed");
                    reports.push(json!({"integration": id.digest(), "failed": e.to_string()}));
                }
            }
        }
        Ok(json!({ "runs": reports }))
    }
}
