//! Faults: while a round runs, at random moments, an instance is `kill -9`ed (and restarted), an
//! instance's broker connection is cut (and restored), or the database fails: a private server is
//! crash-restarted (`postgres`); a formation loses its primary (`failover`: the primary's node
//! killed, run again after a standby is promoted), hands it over (`switchover`) or has it frozen
//! for a random 0.5–8 s (`freeze`: SIGSTOP, long enough for a failover or not). Every fault heals
//! before the next one: a database fault returns once the formation is whole again, one primary
//! and two standbys.
//!
//! In a formation, the first fault of each round is a database fault, so that every schedule
//! runs across one (when its round lasts longer than the first pause); the others are drawn
//! from all the kinds.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Mutex as AsyncMutex;

use order_service_testkit::formation::Formation;

use crate::cluster::{Cluster, Database, Setup};
use crate::rng::Rng;

/// A freeze the monitor does not act on: shorter than its first health check retry (the test
/// kit's formation checks every second and gives up on a node after two seconds).
const UNNOTICED_FREEZE_MS: u64 = 1000;

/// The faults of each setup, in the order `CHAOS_FAULTS` names them.
pub fn kinds(setup: Setup) -> &'static [&'static str] {
    match setup {
        Setup::Server => &["kill", "amqp", "postgres"],
        Setup::Formation => &["kill", "amqp", "failover", "switchover", "freeze"],
    }
}

/// Whether a fault takes the database away (the `CHAOS_FAULTS` kinds after `amqp`).
pub fn is_database_fault(kind: &str) -> bool {
    !matches!(kind, "kill" | "amqp")
}

/// What the injector shares with the run: whether faults are due, the round under way, and
/// the faults injected so far by kind.
#[derive(Clone, Default)]
pub struct Schedule {
    pub active: Arc<AtomicBool>,
    pub round: Arc<AtomicU64>,
    pub counts: Arc<Mutex<BTreeMap<&'static str, u64>>>,
}

impl Schedule {
    /// How many database faults have begun so far.
    pub fn database_faults(&self) -> u64 {
        self.counts
            .lock()
            .map(|c| {
                c.iter()
                    .filter(|(kind, _)| is_database_fault(kind))
                    .map(|(_, n)| n)
                    .sum()
            })
            .unwrap_or(0)
    }
}

/// Injects faults while `schedule.active`, at random moments, and always heals them.
pub async fn inject(
    cluster: Arc<AsyncMutex<Cluster>>,
    schedule: Schedule,
    stop: Arc<AtomicBool>,
    kinds: Vec<&'static str>,
    seed: u64,
) {
    let mut rng = Rng::new(seed ^ 0xFA17);
    let database_kinds: Vec<&'static str> = kinds
        .iter()
        .copied()
        .filter(|k| is_database_fault(k))
        .collect();
    let mut database_fault_round = 0;
    while !stop.load(Ordering::SeqCst) {
        // The fault schedule is timing by design: a random pause before the next fault.
        tokio::time::sleep(Duration::from_millis(rng.between(200, 900))).await;
        if kinds.is_empty() || !schedule.active.load(Ordering::SeqCst) {
            continue;
        }
        let mut cluster = cluster.lock().await;
        // The round may have ended while the lock was awaited: no fault while it is checked.
        if !schedule.active.load(Ordering::SeqCst) {
            continue;
        }
        let round = schedule.round.load(Ordering::SeqCst);
        let formation = matches!(cluster.database, Database::Formation(_));
        let kind = if formation && round > database_fault_round && !database_kinds.is_empty() {
            *rng.pick(&database_kinds)
        } else {
            *rng.pick(&kinds)
        };
        if is_database_fault(kind) {
            database_fault_round = round;
        }
        *schedule
            .counts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(kind)
            .or_default() += 1;
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
            kind => match &mut cluster.database {
                Database::Server(pg) => {
                    let pg = pg.clone();
                    drop(cluster);
                    let _ = tokio::task::spawn_blocking(move || pg.restart()).await;
                }
                Database::Formation(formation) => fail_over(formation, kind, &mut rng).await,
            },
        }
    }
}

/// One database fault of a formation, healed: it returns once the formation is whole again.
///
/// The old primary comes back only once a standby has been promoted (a killed node is run again,
/// a frozen one thawed, after the monitor reports another primary), never during the election:
/// pg_auto_failover 2.0 (Debian's) can then pick the old primary as its own source of missing
/// WAL and loop forever in `fast_forward`, leaving the formation without a primary
/// (hapostgres/pg_auto_failover#1060, fixed upstream after 2.0). The checker found it; what it
/// tests is the service across failovers, not the formation's election.
async fn fail_over(formation: &mut Formation, kind: &str, rng: &mut Rng) {
    let primary = formation.await_healthy().await;
    match kind {
        "failover" => {
            formation.kill(primary);
            formation.await_primary_other_than(primary).await;
            // How long the node stays dead after the promotion: a random outage, by design.
            tokio::time::sleep(Duration::from_millis(rng.between(0, 3000))).await;
            formation.restart(primary);
        }
        "switchover" => {
            formation.switchover().await;
            formation.await_primary_other_than(primary).await;
        }
        _ => {
            formation.freeze(primary);
            // How long the node stays frozen: a random pause, by design; shorter than the
            // monitor's detection (the node resumes as the primary) or long enough to be failed
            // over, in which case it is thawed only once a standby is promoted.
            let frozen = rng.between(500, 8000);
            tokio::time::sleep(Duration::from_millis(frozen)).await;
            if frozen > UNNOTICED_FREEZE_MS {
                formation.await_primary_other_than(primary).await;
            }
            formation.thaw(primary);
        }
    }
    formation.await_healthy().await;
}
