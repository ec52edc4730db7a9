//! Readiness: the signals raised by background components (the AMQP consumer, the outbox relay and
//! the dead-letter parker) and the database check, read together by `/health/ready` and exported as
//! the gauge `ready{component}` (1 ready, 0 not), so an alert needs no probe of its own
//! (docs/operations/observability.md "Operations kit"). A component is ready while it is connected
//! and not stalled: the relay connected to the broker but publishing nothing while events wait is
//! not ready either (docs/messaging.md "Rows the relay sets aside").

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The `component` label of the database's readiness.
pub const DATABASE: &str = "database";

/// The set of components whose readiness the service reports. Empty when AMQP is off.
#[derive(Clone, Default, Debug)]
pub struct Readiness {
    components: Arc<Mutex<Vec<(&'static str, Signal)>>>,
}

/// One component's flags: connected (raised while connected and working, lowered while
/// reconnecting) and stalled (raised while it makes no progress though connected). Every change
/// is mirrored in `ready{component}`.
#[derive(Clone, Debug)]
pub struct Signal {
    component: &'static str,
    ready: Arc<AtomicBool>,
    stalled: Arc<AtomicBool>,
}

impl Signal {
    /// Connected (and working) or not.
    pub fn set(&self, ready: bool) {
        self.ready.store(ready, Ordering::Relaxed);
        record(self.component, self.is_ready());
    }

    /// Making no progress, or making it again.
    pub fn set_stalled(&self, stalled: bool) {
        self.stalled.store(stalled, Ordering::Relaxed);
        record(self.component, self.is_ready());
    }

    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed) && !self.stalled.load(Ordering::Relaxed)
    }

    /// Why it is not ready, if it is not.
    fn why_not(&self) -> Option<&'static str> {
        if !self.ready.load(Ordering::Relaxed) {
            Some("not connected to rabbitmq")
        } else if self.stalled.load(Ordering::Relaxed) {
            Some("stalled: events wait and none was published for OUTBOX_STALLED_AFTER_SECS")
        } else {
            None
        }
    }
}

impl Readiness {
    /// Adds a component, initially not ready (and exported as such at once, so a component that
    /// never connects shows as 0 rather than as nothing).
    pub fn register(&self, name: &'static str) -> Signal {
        let signal = Signal {
            component: name,
            ready: Arc::default(),
            stalled: Arc::default(),
        };
        signal.set(false);
        if let Ok(mut components) = self.components.lock() {
            components.push((name, signal.clone()));
        }
        signal
    }

    /// Each component that is not ready now, with why: `relay (not connected to rabbitmq)`.
    pub fn problems(&self) -> Vec<String> {
        self.components
            .lock()
            .map(|components| {
                components
                    .iter()
                    .filter_map(|(name, signal)| Some(format!("{name} ({})", signal.why_not()?)))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Exports the outcome of a database check: `ready{component="database"}`.
pub fn record_database(reachable: bool) {
    record(DATABASE, reachable);
}

fn record(component: &'static str, ready: bool) {
    metrics::gauge!("ready", "component" => component).set(if ready { 1.0 } else { 0.0 });
}

#[cfg(test)]
mod tests {
    use metrics_exporter_prometheus::PrometheusBuilder;

    use super::*;

    #[test]
    fn the_gauge_follows_each_signal_from_its_registration() {
        let recorder = PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        metrics::with_local_recorder(&recorder, || {
            let readiness = Readiness::default();
            let consumer = readiness.register("consumer");
            let relay = readiness.register("relay");
            assert!(handle.render().contains("ready{component=\"consumer\"} 0"));

            consumer.set(true);
            relay.set(true);
            relay.set(false);
            record_database(true);

            let text = handle.render();
            assert!(text.contains("ready{component=\"consumer\"} 1"), "{text}");
            assert!(text.contains("ready{component=\"relay\"} 0"), "{text}");
            assert!(text.contains("ready{component=\"database\"} 1"), "{text}");
            assert_eq!(readiness.problems(), ["relay (not connected to rabbitmq)"]);
        });
    }

    #[test]
    fn a_stalled_component_is_not_ready_though_connected_and_says_so() {
        let recorder = PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        metrics::with_local_recorder(&recorder, || {
            let readiness = Readiness::default();
            let relay = readiness.register("relay");
            assert_eq!(readiness.problems(), ["relay (not connected to rabbitmq)"]);
            relay.set(true);
            relay.set_stalled(true);

            assert!(!relay.is_ready());
            assert!(handle.render().contains("ready{component=\"relay\"} 0"));
            assert!(
                readiness.problems()[0].starts_with("relay (stalled: "),
                "{:?}",
                readiness.problems()
            );

            relay.set_stalled(false);
            assert!(relay.is_ready());
            assert!(handle.render().contains("ready{component=\"relay\"} 1"));
            assert!(readiness.problems().is_empty());
        });
    }
}
