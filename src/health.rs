//! Readiness: the signals raised by background components (the AMQP consumer, the outbox relay
//! and the dead-letter parker) and the database check, read together by `/health/ready` and
//! exported as the gauge `ready{component}` (1 ready, 0 not), so an alert needs no probe of its
//! own (README "Operations kit").

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The `component` label of the database's readiness.
pub const DATABASE: &str = "database";

/// The set of components whose readiness the service reports. Empty when AMQP is off.
#[derive(Clone, Default, Debug)]
pub struct Readiness {
    components: Arc<Mutex<Vec<(&'static str, Signal)>>>,
}

/// One component's flag: raised while connected and working, lowered while reconnecting. Every
/// change is mirrored in `ready{component}`.
#[derive(Clone, Debug)]
pub struct Signal {
    component: &'static str,
    ready: Arc<AtomicBool>,
}

impl Signal {
    pub fn set(&self, ready: bool) {
        self.ready.store(ready, Ordering::Relaxed);
        record(self.component, ready);
    }

    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed)
    }
}

impl Readiness {
    /// Adds a component, initially not ready (and exported as such at once, so a component that
    /// never connects shows as 0 rather than as nothing).
    pub fn register(&self, name: &'static str) -> Signal {
        let signal = Signal {
            component: name,
            ready: Arc::default(),
        };
        signal.set(false);
        if let Ok(mut components) = self.components.lock() {
            components.push((name, signal.clone()));
        }
        signal
    }

    /// The components that are not ready now.
    pub fn not_ready(&self) -> Vec<&'static str> {
        self.components
            .lock()
            .map(|components| {
                components
                    .iter()
                    .filter(|(_, signal)| !signal.is_ready())
                    .map(|(name, _)| *name)
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
            assert_eq!(readiness.not_ready(), vec!["relay"]);
        });
    }
}
