//! Readiness signals raised by background components (the AMQP consumer, the outbox relay and the
//! dead-letter parker) and read by `/health/ready`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The set of components whose readiness the service reports. Empty when AMQP is off.
#[derive(Clone, Default, Debug)]
pub struct Readiness {
    components: Arc<Mutex<Vec<(&'static str, Signal)>>>,
}

/// One component's flag: raised while connected and working, lowered while reconnecting.
#[derive(Clone, Default, Debug)]
pub struct Signal(Arc<AtomicBool>);

impl Signal {
    pub fn set(&self, ready: bool) {
        self.0.store(ready, Ordering::Relaxed);
    }

    pub fn is_ready(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

impl Readiness {
    /// Adds a component, initially not ready.
    pub fn register(&self, name: &'static str) -> Signal {
        let signal = Signal::default();
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
