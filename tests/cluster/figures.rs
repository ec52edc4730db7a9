//! The figures the cluster test prints (run it with `--nocapture`), quoted in
//! docs/operations/scaling.md: what each kill did, what the load sent, what was stored and
//! delivered, and how often each instance's components reconnected.

use std::sync::atomic::Ordering;
use std::time::Duration;

use order_service_testkit::load::Tally;
use order_service_testkit::load::settled::{Delivered, Stored};
use order_service_testkit::service::Instance;

/// What one node's death did.
pub struct Kill {
    pub node: String,
    /// The inbox's messages at the kill: waiting, and delivered but not yet acknowledged.
    pub inbox: (u64, u64),
    pub outbox_backlog: i64,
    pub requests_in_flight: i64,
    /// From the kill until both instances were ready and an order published through a
    /// surviving node was applied.
    pub recovered: Duration,
    pub probe_applied: Duration,
    /// From the restart until the node ran and every other node listed it again.
    pub rejoined: Duration,
}

/// How long the phases took.
pub struct Timing {
    pub cluster_up: Duration,
    pub load_and_kills: Duration,
    /// From the load's end until every order reached its state.
    pub orders_settled: Duration,
    pub total: Duration,
}

pub async fn print(
    timing: &Timing,
    kills: &[Kill],
    tally: &Tally,
    stored: &Stored,
    delivered: &Delivered,
    instances: &[Instance],
) {
    println!(
        "cluster test: 3 nodes up and clustered in {:.1}s; load and kills {:.1}s; every order \
         settled {:.1}s after the load; checked after {:.1}s",
        timing.cluster_up.as_secs_f64(),
        timing.load_and_kills.as_secs_f64(),
        timing.orders_settled.as_secs_f64(),
        timing.total.as_secs_f64()
    );
    for kill in kills {
        println!(
            "cluster test: kill -9 {}: in flight: inbox {} ready + {} unacked, outbox backlog {}, \
             {} requests; probe applied after {:.2}s, both instances ready after {:.2}s; \
             restarted and rejoined in {:.1}s",
            kill.node,
            kill.inbox.0,
            kill.inbox.1,
            kill.outbox_backlog,
            kill.requests_in_flight,
            kill.probe_applied.as_secs_f64(),
            kill.recovered.as_secs_f64(),
            kill.rejoined.as_secs_f64()
        );
    }
    println!(
        "cluster test: published {} messages ({} deliberate duplicates, {} resent after a lost \
         node, {} publisher reconnects); {} REST requests ({} retried)",
        tally.published.load(Ordering::Relaxed),
        tally.duplicates.load(Ordering::Relaxed),
        tally.resent.load(Ordering::Relaxed),
        tally.publisher_reconnects.load(Ordering::Relaxed),
        tally.requests.load(Ordering::Relaxed),
        tally.retried_requests.load(Ordering::Relaxed)
    );
    println!(
        "cluster test: {} orders, {} ledger rows, {} outbox events; {} delivered to the \
         subscriber ({} distinct: 0 lost, {} published more than once); 0 doubled",
        stored.orders,
        stored.transfers,
        stored.events,
        delivered.copies,
        delivered.distinct,
        delivered.copies - delivered.distinct
    );
    for (slot, instance) in instances.iter().enumerate() {
        let mut reconnects = vec![];
        for component in ["consumer", "relay", "parker"] {
            let series = format!("amqp_reconnects_total{{component=\"{component}\"}}");
            reconnects.push(format!("{component} {}", instance.counter(&series).await));
        }
        println!(
            "cluster test: instance {slot}: amqp_reconnects_total {}; sessions: {}",
            reconnects.join(", "),
            instance.connections().join(", ")
        );
    }
}
