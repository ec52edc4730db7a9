//! Faults: while a round runs, at random moments, an instance is `kill -9`ed (and restarted), an
//! instance's broker connection is cut (and restored), or Postgres is crash-restarted.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Mutex as AsyncMutex;

use crate::cluster::Cluster;
use crate::rng::Rng;

/// Injects faults while `active`, at random moments, and always heals them.
pub async fn inject(
    cluster: Arc<AsyncMutex<Cluster>>,
    active: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    kinds: Vec<&'static str>,
    seed: u64,
    counts: Arc<Mutex<BTreeMap<&'static str, u64>>>,
) {
    let mut rng = Rng::new(seed ^ 0xFA17);
    while !stop.load(Ordering::SeqCst) {
        // The fault schedule is timing by design: a random pause before the next fault.
        tokio::time::sleep(Duration::from_millis(rng.between(200, 900))).await;
        if kinds.is_empty() || !active.load(Ordering::SeqCst) {
            continue;
        }
        let kind = *rng.pick(&kinds);
        let mut cluster = cluster.lock().await;
        let slot = rng.between(0, cluster.instances.len() as u64 - 1) as usize;
        match kind {
            "kill" => {
                cluster.kill(slot).await;
                // How long the instance stays dead: a random outage, by design.
                tokio::time::sleep(Duration::from_millis(rng.between(100, 800))).await;
                cluster.launch(slot).await;
            }
            "amqp" => {
                cluster.instances[slot].amqp.sever();
                // How long the broker connection stays cut: a random outage, by design.
                tokio::time::sleep(Duration::from_millis(rng.between(200, 1500))).await;
                cluster.instances[slot].amqp.restore();
            }
            _ => {
                let pg = cluster.pg.clone();
                drop(cluster);
                let _ = tokio::task::spawn_blocking(move || pg.restart()).await;
            }
        }
        *counts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(kind)
            .or_default() += 1;
    }
}
