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
/// and units (`aws::meter`: `dynamodb_calls`, `dynamodb_read_units`, `dynamodb_write_units`,
/// `dynamodb_index_write_units`) and every other metric, in as few documents as EMF allows
/// ([`merged`]): one an invocation, unless one metric was recorded under two label values.
pub fn flush_metrics_to(mut out: impl std::io::Write) {
    let (calls, units) = crate::aws::meter::take();
    if calls > 0 {
        metrics::counter!("dynamodb_calls").increment(calls);
        metrics::histogram!("dynamodb_read_units").record(units.read);
        metrics::histogram!("dynamodb_write_units").record(units.write);
        metrics::histogram!("dynamodb_index_write_units").record(units.index_write);
    }
    let Some(collector) = METRICS.get() else {
        return;
    };
    let mut lines = Vec::new();
    if let Err(e) = collector.flush(&mut lines) {
        tracing::warn!(error.message = %e, "metrics flush failed");
    }
    let text = String::from_utf8_lossy(&lines);
    for document in merged(&text) {
        if let Err(e) = writeln!(out, "{document}") {
            tracing::warn!(error.message = %e, "metrics flush failed");
        }
    }
}

/// EMF documents (one a line) merged into as few as hold them: one document may carry several
/// metric directives (`_aws.CloudWatchMetrics`), each naming its dimensions and metrics among
/// the document's members, so documents whose members agree wherever they share a name are
/// one (the log bytes of each document's head and of the shared `function`, once). Two that
/// disagree (a counter under two label values) stay two. A line that is no JSON object is kept
/// as it is.
fn merged(text: &str) -> Vec<String> {
    use serde_json::{Map, Value};
    let mut out: Vec<Map<String, Value>> = Vec::new();
    let mut kept = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(Value::Object(document)) = serde_json::from_str::<Value>(line) else {
            kept.push(line.to_owned());
            continue;
        };
        let fits = |into: &Map<String, Value>| {
            document
                .iter()
                .filter(|(name, _)| *name != "_aws")
                .all(|(name, value)| into.get(name).is_none_or(|v| v == value))
        };
        match out.iter_mut().find(|into| fits(into)) {
            Some(into) => {
                let directives = document["_aws"]["CloudWatchMetrics"].as_array().cloned();
                for (name, value) in document {
                    if name != "_aws" {
                        into.insert(name, value);
                    }
                }
                if let Some(Value::Array(all)) = into
                    .get_mut("_aws")
                    .and_then(|aws| aws.get_mut("CloudWatchMetrics"))
                {
                    all.extend(directives.unwrap_or_default());
                }
            }
            None => out.push(document),
        }
    }
    out.into_iter()
        .map(|d| Value::Object(d).to_string())
        .chain(kept)
        .collect()
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
    fn an_invocations_metrics_are_one_document_unless_two_disagree() {
        let doc = |dims: &[&str], members: serde_json::Value| {
            let mut d = serde_json::json!({"_aws": {"Timestamp": 1, "CloudWatchMetrics": [
                {"Namespace": NAMESPACE, "Dimensions": [dims], "Metrics": [{"Name": "m"}]}]}});
            for (k, v) in members.as_object().unwrap() {
                d[k] = v.clone();
            }
            d.to_string()
        };
        let text = [
            doc(
                &["function"],
                serde_json::json!({"function": "f", "dynamodb_calls": 2}),
            ),
            doc(
                &["function", "kind"],
                serde_json::json!({"function": "f", "kind": "payments", "latency_ms": [3.0]}),
            ),
            doc(
                &["function", "outcome"],
                serde_json::json!({"function": "f", "outcome": "stored", "deliveries": 1}),
            ),
            doc(
                &["function", "outcome"],
                serde_json::json!({"function": "f", "outcome": "duplicate", "deliveries": 1}),
            ),
            "not json".to_owned(),
        ]
        .join("\n");
        let out = merged(&text);
        assert_eq!(out.len(), 3, "{out:?}");
        let first: serde_json::Value = serde_json::from_str(&out[0]).unwrap();
        assert_eq!(
            first["_aws"]["CloudWatchMetrics"].as_array().unwrap().len(),
            3
        );
        assert_eq!(
            (&first["dynamodb_calls"], &first["kind"], &first["outcome"]),
            (
                &serde_json::json!(2),
                &serde_json::json!("payments"),
                &serde_json::json!("stored")
            )
        );
        let second: serde_json::Value = serde_json::from_str(&out[1]).unwrap();
        assert_eq!(second["outcome"], "duplicate");
        assert_eq!(out[2], "not json");
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
