//! The JSON log format (`LOG_FORMAT=json`): one object per line with `timestamp`, `level`, the
//! event's fields (`message` among them), `target`, the current span (`span`) and every span
//! around it (`spans`, outermost first), and — inside the span of a request, a delivery or any
//! other traced work — `trace_id` and `span_id`, taken from the innermost span that recorded them
//! (see `spans::continue_trace`), so a log line can be found from a trace and back.

use std::fmt;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::{JsonFields, Writer};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

/// The event format; span fields must be formatted with [`JsonFields`].
pub struct JsonLog;

impl<S> FormatEvent<S, JsonFields> for JsonLog
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, JsonFields>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let metadata = event.metadata();
        let mut line = Map::new();
        line.insert(
            "timestamp".into(),
            chrono::Utc::now()
                .to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
                .into(),
        );
        line.insert("level".into(), metadata.level().as_str().into());
        event.record(&mut Fields(&mut line));
        line.insert("target".into(), metadata.target().into());

        let spans: Vec<Map<String, Value>> = ctx
            .event_scope()
            .into_iter()
            .flat_map(|scope| scope.from_root())
            .map(|span| {
                let mut fields: Map<String, Value> = span
                    .extensions()
                    .get::<FormattedFields<JsonFields>>()
                    .and_then(|formatted| serde_json::from_str(formatted).ok())
                    .unwrap_or_default();
                fields.insert("name".into(), span.name().into());
                fields
            })
            .collect();
        let trace = spans.iter().rev().find_map(|fields| {
            Some((
                fields.get("trace_id")?.clone(),
                fields.get("span_id")?.clone(),
            ))
        });
        if let Some(current) = spans.last() {
            line.insert("span".into(), Value::Object(current.clone()));
        }
        if !spans.is_empty() {
            line.insert(
                "spans".into(),
                Value::Array(spans.into_iter().map(Value::Object).collect()),
            );
        }
        if let Some((trace_id, span_id)) = trace {
            line.insert("trace_id".into(), trace_id);
            line.insert("span_id".into(), span_id);
        }
        writeln!(writer, "{}", Value::Object(line))
    }
}

/// An event's fields as JSON values.
struct Fields<'a>(&'a mut Map<String, Value>);

impl Visit for Fields<'_> {
    fn record_f64(&mut self, field: &Field, value: f64) {
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

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.0.insert(field.name().into(), value.to_string().into());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().into(), format!("{value:?}").into());
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tracing_subscriber::layer::SubscriberExt;

    use super::*;
    use crate::telemetry::tests::Writer;
    use crate::telemetry::{TraceContext, continue_trace};

    /// The lines written while `f` runs under the JSON format.
    fn logged(f: impl FnOnce()) -> Vec<Value> {
        let written = Arc::new(Mutex::new(Vec::<u8>::new()));
        let sink = written.clone();
        let layer = tracing_subscriber::fmt::layer()
            .fmt_fields(JsonFields::new())
            .event_format(JsonLog)
            .with_writer(move || Writer(sink.clone()));
        tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), f);
        let written = written.lock().unwrap();
        std::str::from_utf8(&written)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).expect("a JSON line"))
            .collect()
    }

    #[test]
    fn a_line_inside_traced_work_carries_its_trace_and_span_ids() {
        let caller = TraceContext::start();
        let mut ours = None;
        let lines = logged(|| {
            let span = tracing::info_span!(
                "http",
                method = "POST",
                trace_id = tracing::field::Empty,
                span_id = tracing::field::Empty
            );
            ours = Some(continue_trace(&span, Some(&caller)));
            span.in_scope(|| {
                let inner = tracing::info_span!("query", table = "orders");
                inner.in_scope(|| tracing::info!(rows = 2_u64, "read \"it\"\nall"));
            });
            tracing::warn!("outside");
        });
        let ours = ours.unwrap();
        let inside = &lines[0];
        assert_eq!(inside["trace_id"], ours.trace_id().to_string());
        assert_eq!(inside["span_id"], ours.span_id().to_string());
        assert_eq!(inside["trace_id"], caller.trace_id().to_string());
        assert_eq!(inside["message"], "read \"it\"\nall");
        assert_eq!(inside["rows"], 2);
        assert_eq!(inside["level"], "INFO");
        assert_eq!(inside["span"]["name"], "query");
        assert_eq!(inside["spans"][0]["name"], "http");
        assert_eq!(inside["spans"][0]["method"], "POST");
        assert!(inside["timestamp"].as_str().unwrap().ends_with('Z'));

        let outside = &lines[1];
        assert_eq!(outside["message"], "outside");
        assert!(outside.get("trace_id").is_none(), "{outside}");
        assert!(outside.get("span").is_none(), "{outside}");
    }
}
