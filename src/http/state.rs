//! What every handler can reach: the application, the metrics registry and the readiness signals.

use metrics_exporter_prometheus::PrometheusHandle;

use crate::app::App;
use crate::health::Readiness;

#[derive(Clone)]
pub struct ApiState {
    pub app: App,
    pub metrics: PrometheusHandle,
    /// Background components (AMQP consumer, outbox relay, dead-letter parker) that must be up
    /// for readiness.
    pub readiness: Readiness,
}
