//! Span export over OTLP, switched on by `OTEL_EXPORTER_OTLP_ENDPOINT` and configured by
//! OpenTelemetry's own environment variables, read by its SDK (docs/operations/observability.md
//! "Tracing"). Unset, nothing is built: no exporter, no background task, no connection. The
//! transport is HTTP/protobuf, sent from a task on the service's runtime; spans still queued are
//! flushed at shutdown.

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{ExporterBuildError, SpanExporter, WithExportConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::runtime::Tokio;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::trace::span_processor_with_async_runtime::BatchSpanProcessor;

use crate::config::DEFAULT_SERVICE_NAME;

/// The variable that switches export on (the contract's "Running" section).
pub const ENDPOINT_VARIABLE: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
/// How long shutdown waits for the last spans to leave.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(10);
/// The one OTLP protocol this build sends.
const HTTP_PROTOBUF: &str = "http/protobuf";

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(
        "{variable}={value:?} is not supported: spans are exported over OTLP http/protobuf only \
         (point {ENDPOINT_VARIABLE} at the collector's OTLP/HTTP port, usually 4318)"
    )]
    UnsupportedProtocol {
        variable: &'static str,
        value: String,
    },
    #[error("cannot build the OTLP span exporter")]
    Build(#[source] ExporterBuildError),
}

/// Whether spans are to be exported, from the environment as `variable` reads it: when
/// `OTEL_EXPORTER_OTLP_ENDPOINT` is set, unless `OTEL_SDK_DISABLED` is `true`. A protocol other
/// than http/protobuf is refused rather than silently sent the wrong way.
pub fn wanted(variable: impl Fn(&str) -> Option<String>) -> Result<bool, ExportError> {
    let set = |name: &str| variable(name).filter(|value| !value.trim().is_empty());
    let disabled = set("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    if disabled || set(ENDPOINT_VARIABLE).is_none() {
        return Ok(false);
    }
    // The traces-specific variable wins over the general one.
    let protocol = [
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ]
    .into_iter()
    .find_map(|name| set(name).map(|value| (name, value)));
    match protocol {
        Some((variable, value)) if value.trim() != HTTP_PROTOBUF => {
            Err(ExportError::UnsupportedProtocol { variable, value })
        }
        _ => Ok(true),
    }
}

/// The exporting tracer provider, or `None` when export is off. Must run inside the Tokio
/// runtime, where its batch task is spawned.
pub fn start() -> Result<Option<SdkTracerProvider>, ExportError> {
    if !wanted(|name| std::env::var(name).ok())? {
        return Ok(None);
    }
    let exporter = SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .build()
        .map_err(ExportError::Build)?;
    let provider = SdkTracerProvider::builder()
        .with_span_processor(BatchSpanProcessor::builder(exporter, Tokio).build())
        .with_resource(resource())
        .build();
    Ok(Some(provider))
}

/// The tracer the tracing layer records into.
pub fn tracer(provider: &SdkTracerProvider) -> opentelemetry_sdk::trace::SdkTracer {
    provider.tracer(env!("CARGO_PKG_NAME"))
}

/// Exports what is still queued and stops, within [`FLUSH_TIMEOUT`].
pub async fn flush(provider: SdkTracerProvider) {
    // The SDK's shutdown blocks until its batch task answered: off the runtime's workers.
    let shutdown = tokio::task::spawn_blocking(move || provider.shutdown());
    match tokio::time::timeout(FLUSH_TIMEOUT, shutdown).await {
        Ok(Ok(Ok(()))) => {}
        Ok(Ok(Err(error))) => tracing::warn!(%error, "could not flush the last spans"),
        Ok(Err(error)) => tracing::warn!(%error, "could not flush the last spans"),
        Err(_) => tracing::warn!(timeout = ?FLUSH_TIMEOUT, "gave up flushing the last spans"),
    }
}

/// OpenTelemetry's resource from its variables (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`),
/// named [`DEFAULT_SERVICE_NAME`] when they name no service.
fn resource() -> Resource {
    let detected = Resource::builder().build();
    let named = detected
        .get(&opentelemetry::Key::from_static_str("service.name"))
        .is_some_and(|name| !name.as_str().starts_with("unknown_service"));
    if named {
        detected
    } else {
        Resource::builder()
            .with_service_name(DEFAULT_SERVICE_NAME)
            .build()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wanted_with(variables: &[(&str, &str)]) -> Result<bool, ExportError> {
        wanted(|name| {
            variables
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    const ENDPOINT: (&str, &str) = (ENDPOINT_VARIABLE, "http://127.0.0.1:4318");

    #[test]
    fn spans_are_exported_only_when_the_endpoint_is_set() {
        assert!(!wanted_with(&[]).unwrap());
        assert!(!wanted_with(&[(ENDPOINT_VARIABLE, " ")]).unwrap());
        // The traces-specific endpoint alone does not switch export on.
        assert!(
            !wanted_with(&[(
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "http://127.0.0.1:4318/v1/traces"
            )])
            .unwrap()
        );
        assert!(wanted_with(&[ENDPOINT]).unwrap());
    }

    #[test]
    fn the_sdk_can_be_disabled() {
        assert!(!wanted_with(&[ENDPOINT, ("OTEL_SDK_DISABLED", "TRUE")]).unwrap());
        assert!(wanted_with(&[ENDPOINT, ("OTEL_SDK_DISABLED", "false")]).unwrap());
    }

    #[test]
    fn only_http_protobuf_is_accepted_and_the_traces_protocol_wins() {
        assert!(
            wanted_with(&[ENDPOINT, ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")]).unwrap()
        );
        for protocol in ["grpc", "http/json"] {
            let refused = wanted_with(&[ENDPOINT, ("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)]);
            assert!(
                matches!(refused, Err(ExportError::UnsupportedProtocol { .. })),
                "{protocol}"
            );
        }
        assert!(
            wanted_with(&[
                ENDPOINT,
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
                ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"),
            ])
            .unwrap()
        );
        // Without an endpoint the protocol does not matter.
        assert!(!wanted_with(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]).unwrap());
    }
}
