//! One JSON log line a people can join: `timestamp`, `level`, `function`, the invocation's
//! `request_id` (the id every answer carries in `x-request-id`) and, where one is known, the
//! `event_key`, all at the top level beside the event's own fields (`message`, ...). The fields
//! of the spans around the event (the Lambda runtime's `requestId`, a delivery's `event_key`
//! and integration digest) are lifted to the top level, the innermost winning.

use serde_json::{Map, Value};
use std::fmt;
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::{JsonFields, Writer};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

/// The event formatter of every function's JSON log lines.
pub struct Line {
    pub function: &'static str,
}

/// An event's fields as JSON values.
struct Fields<'a>(&'a mut Map<String, Value>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().into(), format!("{value:?}").into());
    }
}

/// A span field's name at the top level of a line.
fn lifted(name: &str) -> &str {
    match name {
        // The Lambda runtime's name for the invocation's id.
        "requestId" => "request_id",
        other => other,
    }
}

impl<S> FormatEvent<S, JsonFields> for Line
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, JsonFields>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut line = Map::new();
        let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        line.insert("timestamp".into(), now.into());
        line.insert("level".into(), event.metadata().level().as_str().into());
        line.insert("function".into(), self.function.into());
        if let Some(scope) = ctx.event_scope() {
            for span in scope.from_root() {
                let extensions = span.extensions();
                let Some(fields) = extensions.get::<FormattedFields<JsonFields>>() else {
                    continue;
                };
                let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(&fields.fields)
                else {
                    continue;
                };
                for (name, value) in fields {
                    line.insert(lifted(&name).to_owned(), value);
                }
            }
        }
        event.record(&mut Fields(&mut line));
        let text = serde_json::to_string(&line).map_err(|_| fmt::Error)?;
        writeln!(writer, "{text}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_line_carries_the_request_id_and_event_key_at_the_top_level() {
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .fmt_fields(JsonFields::new())
            .event_format(Line {
                function: "payment-webhook",
            })
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            let invoke = tracing::info_span!("Lambda runtime invoke", requestId = "req-7");
            let _invoke = invoke.enter();
            let delivery = tracing::info_span!("delivery", event_key = tracing::field::Empty);
            let _delivery = delivery.enter();
            delivery.record("event_key", "payment:standard:pay_1");
            tracing::warn!(outcome = "stored", "a delivery");
        });
        let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        let line: Value = serde_json::from_str(text.trim()).unwrap();
        assert_eq!(line["level"], "WARN");
        assert_eq!(line["function"], "payment-webhook");
        assert_eq!(line["request_id"], "req-7");
        assert_eq!(line["event_key"], "payment:standard:pay_1");
        assert_eq!(line["message"], "a delivery");
        assert_eq!(line["outcome"], "stored");
        assert!(chrono::DateTime::parse_from_rfc3339(line["timestamp"].as_str().unwrap()).is_ok());
    }
}
