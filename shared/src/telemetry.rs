//! Logs and metrics: JSON lines ([`line::Line`]: timestamp, level, function, request id and event
//! key at the top level) unless `AWS_LAMBDA_LOG_FORMAT=Text` asks for text, the level from
//! `AWS_LAMBDA_LOG_LEVEL` (else `RUST_LOG`, else `info`). Metrics go through the `metrics`
//! facade to CloudWatch Embedded Metric Format lines in the same log stream, one flush per
//! invocation.

mod line;

use std::sync::OnceLock;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// The CloudWatch namespace of every metric.
pub const NAMESPACE: &str = "FirmspaceEvents";

static METRICS: OnceLock<&'static metrics_cloudwatch_embedded::Collector> = OnceLock::new();

/// The filter directive: `AWS_LAMBDA_LOG_LEVEL` wins over `RUST_LOG`; `info` when neither.
pub fn level(aws_lambda_log_level: Option<&str>, rust_log: Option<&str>) -> String {
    aws_lambda_log_level
        .or(rust_log)
        .filter(|l| !l.is_empty())
        .unwrap_or("info")
        .to_ascii_lowercase()
}

/// Installs the log subscriber and the metrics recorder once; later calls change nothing.
/// `function` becomes the metrics' `function` dimension.
pub fn init(function: &'static str) {
    let env = |name: &str| std::env::var(name).ok();
    let directive = level(
        env("AWS_LAMBDA_LOG_LEVEL").as_deref(),
        env("RUST_LOG").as_deref(),
    );
    // Per-target levels (`info,firmspace=debug`) without span or field filters, so no regex.
    let filter: Targets = directive
        .parse()
        .unwrap_or_else(|_| Targets::new().with_default(tracing::Level::INFO));
    let text = env("AWS_LAMBDA_LOG_FORMAT").is_some_and(|v| v.eq_ignore_ascii_case("text"));
    let _ = if text {
        tracing_subscriber::fmt()
            .with_target(false)
            .finish()
            .with(filter)
            .try_init()
    } else {
        tracing_subscriber::fmt()
            .fmt_fields(tracing_subscriber::fmt::format::JsonFields::new())
            .event_format(line::Line { function })
            .finish()
            .with(filter)
            .try_init()
    };
    if METRICS.get().is_none() {
        match metrics_cloudwatch_embedded::Builder::new()
            .cloudwatch_namespace(NAMESPACE)
            .with_dimension("function", function)
            .init()
        {
            Ok(collector) => {
                let _ = METRICS.set(collector);
            }
            Err(e) => tracing::warn!(error.message = %e, "metrics recorder not installed"),
        }
    }
}

/// Writes the invocation's metrics as EMF lines to stdout (a no-op without `init`).
pub fn flush_metrics() {
    flush_metrics_to(std::io::stdout());
}

/// Writes the metrics recorded since the last flush to `out`: the invocation's DynamoDB calls
/// and units (`aws::meter`) are one document, `dynamodb_calls`, `dynamodb_read_units`,
/// `dynamodb_write_units` and `dynamodb_index_write_units`.
pub fn flush_metrics_to(out: impl std::io::Write) {
    let (calls, units) = crate::aws::meter::take();
    if calls > 0 {
        metrics::counter!("dynamodb_calls").increment(calls);
        metrics::histogram!("dynamodb_read_units").record(units.read);
        metrics::histogram!("dynamodb_write_units").record(units.write);
        metrics::histogram!("dynamodb_index_write_units").record(units.index_write);
    }
    if let Some(collector) = METRICS.get() {
        if let Err(e) = collector.flush(out) {
            tracing::warn!(error.message = %e, "metrics flush failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The metrics and the meter are the process's: the tests that flush them take turns.
    static FLUSHING: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn the_lambda_level_wins_over_rust_log_and_info_is_the_default() {
        assert_eq!(level(Some("DEBUG"), Some("warn")), "debug");
        assert_eq!(level(None, Some("warn")), "warn");
        assert_eq!(level(None, None), "info");
        assert_eq!(level(Some(""), None), "info");
    }

    #[test]
    fn metrics_reach_the_log_as_cloudwatch_embedded_metric_lines() {
        let _turn = FLUSHING.lock().unwrap_or_else(|p| p.into_inner());
        init("unit-test");
        metrics::counter!("deliveries", "source" => "standard", "outcome" => "duplicate")
            .increment(2);
        let mut out = Vec::new();
        flush_metrics_to(&mut out);
        let text = String::from_utf8(out).unwrap();
        let line = text
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .find(|v| v.get("deliveries").is_some())
            .expect("an EMF line with the counter");
        assert_eq!(line["deliveries"], 2);
        assert_eq!(line["outcome"], "duplicate");
        assert_eq!(line["function"], "unit-test");
        let directive = &line["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(directive["Namespace"], NAMESPACE);
        assert_eq!(directive["Metrics"][0]["Name"], "deliveries");
    }

    #[test]
    fn an_invocations_calls_and_units_are_one_document() {
        let _turn = FLUSHING.lock().unwrap_or_else(|p| p.into_inner());
        init("unit-test");
        let units = crate::aws::Units {
            read: 1.5,
            write: 12.0,
            index_write: 4.0,
        };
        crate::aws::meter::count(3, units);
        crate::aws::meter::count(2, units);
        let mut out = Vec::new();
        flush_metrics_to(&mut out);
        let text = String::from_utf8(out).unwrap();
        let documents: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|v| v.get("dynamodb_calls").is_some())
            .collect();
        assert_eq!(documents.len(), 1, "{text}");
        let d = &documents[0];
        assert_eq!(d["dynamodb_calls"], 5);
        assert_eq!(d["dynamodb_read_units"], serde_json::json!([3.0]));
        assert_eq!(d["dynamodb_write_units"], serde_json::json!([24.0]));
        assert_eq!(d["dynamodb_index_write_units"], serde_json::json!([8.0]));
    }
}
