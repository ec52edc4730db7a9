//! Logs (JSON or human-readable, filtered by `RUST_LOG`), traces (W3C trace context, carried
//! through every door, and spans exported over OTLP when configured:
//! docs/operations/observability.md "Tracing") and the Prometheus recorder.

mod export;
mod json;
mod spans;
pub mod trace_context;

use std::sync::OnceLock;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Level;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::fmt::format::JsonFields;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

pub use export::ExportError;
pub use spans::continue_trace;
pub use trace_context::TraceContext;

use crate::config::LogFormat;

/// The log filter when `RUST_LOG` is unset.
const DEFAULT_LOG_FILTER: &str = "info,sqlx=warn,lapin=warn";

/// What [`init`] installed that needs a word at shutdown: the span exporter, when on.
#[must_use = "call `shutdown` at the end to flush the last spans"]
pub struct Telemetry {
    export: Option<SdkTracerProvider>,
}

impl Telemetry {
    /// Flushes the spans still queued for export (bounded in time); nothing when export is off.
    pub async fn shutdown(self) {
        if let Some(provider) = self.export {
            export::flush(provider).await;
        }
    }
}

/// Installs the global subscriber: logs in `format`, filtered by `RUST_LOG`, and, when
/// `OTEL_EXPORTER_OTLP_ENDPOINT` is set, the span exporter, which sees the service's own spans
/// whatever `RUST_LOG` says (so a quiet log level does not cut traces). Call once, at start,
/// inside the runtime. Fails on an OpenTelemetry setting this build cannot honour.
pub fn init(format: LogFormat) -> Result<Telemetry, ExportError> {
    let export = export::start()?;
    let spans = export.as_ref().map(|provider| {
        tracing_opentelemetry::layer()
            .with_tracer(export::tracer(provider))
            .with_filter(Targets::new().with_target(env!("CARGO_CRATE_NAME"), Level::INFO))
    });
    let result = tracing_subscriber::registry()
        .with(log_layer(format))
        .with(spans)
        .try_init();
    // Already installed (tests build several applications in one process): keep the first.
    drop(result);
    match &export {
        Some(_) => tracing::info!("exporting spans over OTLP"),
        None => tracing::info!(
            "not exporting spans ({} unset, or OTEL_SDK_DISABLED=true)",
            export::ENDPOINT_VARIABLE
        ),
    }
    Ok(Telemetry { export })
}

/// Installs logging alone (for commands that do no traced work). Call once, at start.
pub fn init_logging(format: LogFormat) {
    let result = tracing_subscriber::registry()
        .with(log_layer(format))
        .try_init();
    drop(result);
}

fn log_layer<S>(format: LogFormat) -> Box<dyn Layer<S> + Send + Sync>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_LOG_FILTER));
    match format {
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .fmt_fields(JsonFields::new())
            .event_format(json::JsonLog)
            .with_filter(filter)
            .boxed(),
        LogFormat::Pretty => tracing_subscriber::fmt::layer().with_filter(filter).boxed(),
    }
}

/// Buckets of the histograms that count what a batch holds.
const BATCH_BUCKETS: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0];

/// The process-wide Prometheus recorder; installed on first use.
pub fn metrics() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let recorder = PrometheusBuilder::new()
                .set_buckets(&[
                    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                ])
                // Counts per batch, not durations: the consumer's deliveries (docs/messaging.md
                // "Batched consumer commits") and the relay's events ("Batches that grow with
                // load").
                .and_then(|b| {
                    b.set_buckets_for_metric(
                        Matcher::Full("amqp_batch_size".to_owned()),
                        BATCH_BUCKETS,
                    )
                })
                .and_then(|b| {
                    b.set_buckets_for_metric(
                        Matcher::Full("outbox_relay_batch_events".to_owned()),
                        BATCH_BUCKETS,
                    )
                })
                .map(|b| b.build_recorder())
                .unwrap_or_else(|_| PrometheusBuilder::new().build_recorder());
            let handle = recorder.handle();
            // Fails only if another recorder is installed; the handle still renders ours.
            let _ = metrics::set_global_recorder(recorder);
            handle
        })
        .clone()
}

/// An error with its causes, outermost first, joined by ": ": how an error is logged, once, at
/// the edge that decides what to do with it.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// A value for a log line, with control characters escaped (`\n`, `\u{1b}`, …) as Rust's
/// `escape_debug` writes them. Log a client-controlled string (a message's reason, a header)
/// through this: the pretty format writes values raw, so a newline or an ANSI escape in one
/// would forge a log line or rewrite the terminal.
pub fn escaped(value: &str) -> Escaped<'_> {
    Escaped(value)
}

/// See [`escaped`].
pub struct Escaped<'a>(&'a str);

impl std::fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use std::fmt::Write;
        for c in self.0.chars() {
            if c.is_control() {
                write!(f, "{}", c.escape_debug())?;
            } else {
                f.write_char(c)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn the_chain_names_every_cause_outermost_first() {
        let error = Outer(std::io::Error::other("inner"));
        assert_eq!(error_chain(&error), "outer: inner");
    }

    #[test]
    fn control_characters_are_escaped_and_the_rest_is_kept() {
        assert_eq!(
            escaped("a\nb\r\t\u{1b}[31mred\u{7f}\u{9b}é").to_string(),
            "a\\nb\\r\\t\\u{1b}[31mred\\u{7f}\\u{9b}é"
        );
        assert_eq!(escaped("plain text").to_string(), "plain text");
    }

    /// What the pretty format writes for a dead-lettered poison message whose field name holds
    /// a newline and ANSI escapes: one line, without a raw control character.
    #[test]
    fn a_poison_messages_reason_is_logged_on_one_line_without_control_characters() {
        let body = br#"{"event_id":"e-1","type":"payment.succeeded","occurred_at":"2026-01-01T00:00:00Z","data":{},"x\n2026-01-01T00:00:00Z  INFO \u001b[31mfake\u001b[0m":1}"#;
        let poison = crate::amqp::inbound::parse(body).expect_err("a poison message");
        let reason = poison.to_string();
        assert!(
            reason.contains('\n'),
            "the reason quotes the field: {reason:?}"
        );

        let written = std::sync::Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
        let sink = written.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(move || Writer(sink.clone()))
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            tracing::warn!(reason = %escaped(&reason), "dead-lettering");
        });

        let written = written.lock().unwrap();
        let line = std::str::from_utf8(&written).unwrap();
        let line = line.strip_suffix('\n').expect("one line");
        assert!(line.contains("fake"), "{line}");
        assert!(!line.chars().any(char::is_control), "{line:?}");
    }

    /// A log destination the test reads back.
    pub(super) struct Writer(pub(super) std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Writer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
}
