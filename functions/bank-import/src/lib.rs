#![forbid(unsafe_code)]
//! The statement import: on its schedule (every 5 minutes in the cloud) for every monobank bank
//! integration, and at once for an integration the API asked for (an SQS message
//! `{"integration_id"}`). Each run is `bank::import::run`: one statement call per window per
//! integration under a lease, rows stored once, the cursor moved after them.

use firmspace::bank::import::{self, Limits, Report};
use firmspace::config::{parse_var, Config, ConfigError};
use firmspace::ids::IntegrationId;
use firmspace::integrations;
use firmspace::messages::media::Apis;
use firmspace::store::Store;
use lambda_runtime::LambdaEvent;
use serde_json::{json, Value};
use std::time::Duration;

pub struct App {
    store: Store,
    apis: Apis,
    limits: Limits,
}

impl App {
    pub fn new(store: Store, apis: Apis, limits: Limits) -> Self {
        Self {
            store,
            apis,
            limits,
        }
    }

    /// `STATEMENT_INTERVAL_MS` (monobank's 60000; less only on the local and test stages),
    /// `IMPORT_MAX_WAIT_MS` (how long a run waits for the next window, default 0: the next run
    /// reads on), `MONOBANK_PERSONAL_API_URL`.
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
        let apis = Apis::from_env(config.allows_loopback())?;
        Ok(Self::new(config.store().await, apis, limits))
    }

    /// A scheduled event runs every integration; an SQS event the ones it names.
    pub async fn handle(&self, event: LambdaEvent<Value>) -> Result<Value, lambda_runtime::Error> {
        let answer = self.process(&event.payload).await;
        firmspace::telemetry::flush_metrics();
        answer
    }

    pub async fn process(&self, event: &Value) -> Result<Value, lambda_runtime::Error> {
        let Some(records) = event.get("Records").and_then(Value::as_array) else {
            // One integration's failure is its own; the others still run. No new one starts in
            // the last 20 s of the function's minute: the next schedule takes it.
            let ids = import::scheduled(&self.store).await?;
            let started = std::time::Instant::now();
            let mut reports = Vec::new();
            for id in ids {
                if started.elapsed() > Duration::from_secs(40) {
                    reports
                        .push(json!({"integration_id": id.id, "skipped": "left for the next run"}));
                    continue;
                }
                match self.one(&id).await {
                    Ok(report) => reports.push(report),
                    Err(e) => {
                        tracing::warn!(integration = %id, error = %e, "statement import failed");
                        reports.push(json!({"integration_id": id.id, "failed": e.to_string()}));
                    }
                }
            }
            return Ok(json!({ "runs": reports }));
        };
        // Requests from the API: a message that cannot be read is dropped with a log line (it
        // names no integration to retry for); a store failure fails only its own message.
        let mut failures = Vec::new();
        for record in records {
            let id = record
                .get("body")
                .and_then(Value::as_str)
                .and_then(|b| serde_json::from_str::<Value>(b).ok())
                .and_then(|b| b.get("integration_id")?.as_str().map(str::to_owned))
                .and_then(|raw| IntegrationId::parse(&raw).ok());
            let Some(id) = id else {
                tracing::warn!("an import request without an integration id; dropped");
                continue;
            };
            if let Err(e) = self.one(&id).await {
                tracing::warn!(integration = %id, error = %e, "import request failed; retried");
                let message_id = record.get("messageId").cloned().unwrap_or(Value::Null);
                failures.push(json!({ "itemIdentifier": message_id }));
            }
        }
        Ok(json!({ "batchItemFailures": failures }))
    }

    async fn one(&self, id: &IntegrationId) -> Result<Value, firmspace::store::StoreError> {
        let Some(integration) = integrations::get(&self.store, id).await? else {
            return Ok(json!({"integration_id": id.id, "skipped": "no such integration"}));
        };
        let report: Report =
            match import::run(&self.store, &self.apis, &integration, &self.limits).await {
                Ok(report) => report,
                Err(import::ImportError::Store(e)) => return Err(e),
                Err(e) => return Ok(json!({"integration_id": id.id, "skipped": e.to_string()})),
            };
        tracing::info!(integration = %id, ?report, "statement import");
        metrics::counter!("statement_rows").increment(report.imported as u64);
        Ok(json!({
            "integration_id": id.id, "calls": report.calls, "rows": report.rows,
            "imported": report.imported, "running": report.running,
            "stopped": report.stopped, "caught_up": report.caught_up,
        }))
    }
}
