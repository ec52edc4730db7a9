//! What every handler can reach: the application, the metrics registry and the health signals.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use metrics_exporter_prometheus::PrometheusHandle;

use crate::app::App;

#[derive(Clone)]
pub struct AppState {
    pub app: App,
    pub metrics: PrometheusHandle,
    /// Whether the AMQP side (consumer and relay) is connected; `None` when it is switched off.
    pub broker: Option<BrokerHealth>,
}

/// A flag the AMQP components raise while connected and lower while reconnecting.
#[derive(Clone, Default, Debug)]
pub struct BrokerHealth(Arc<AtomicBool>);

impl BrokerHealth {
    pub fn set(&self, connected: bool) {
        self.0.store(connected, Ordering::Relaxed);
    }

    pub fn is_connected(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}
