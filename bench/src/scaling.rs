//! The scaling curve: throughput of the one-statement reference, the consumer and REST at each
//! concurrency level (raw connections · consumer prefetch · REST clients), one shorter run per
//! point (drawn by `charts.rs`, tabulated by `markdown.rs`).

use crate::Bench;
use crate::raw::{self, Design};
use crate::report::Scaling;
use crate::scratch::Db;
use crate::service::Overrides;
use crate::{consumer, rest};

/// One run per concurrency level and door.
pub async fn measure(bench: &Bench, raw_db: &Db) -> anyhow::Result<Scaling> {
    let plan = &bench.plan;
    let levels = plan.scaling_levels.clone();
    let mut scaling = Scaling {
        levels: levels.clone(),
        reference_tx_per_s: vec![],
        consumer_msgs_per_s: vec![],
        rest_req_per_s: vec![],
    };
    for &level in &levels {
        let design = Design::OneStatement;
        let run = raw::run(raw_db, design, level, plan.curve_duration, 0.0).await?;
        eprintln!("scaling: reference at {level}: {:.0} tx/s", run.per_s);
        scaling.reference_tx_per_s.push(run.per_s);
    }
    for &level in &levels {
        let overrides = Overrides {
            prefetch: Some(u16::try_from(level).unwrap_or(u16::MAX)),
            batch_size: None,
        };
        let label = format!("scaling{level}");
        let run = consumer::run(bench, &label, plan.curve_orders, overrides).await?;
        eprintln!(
            "scaling: consumer at prefetch {level}: {:.0} msgs/s",
            run.msgs_per_s
        );
        scaling.consumer_msgs_per_s.push(run.msgs_per_s);
    }
    let target = rest::Target::start(bench, "rest-scaling").await?;
    for &level in &levels {
        let run = rest::closed_loop(&target, level, plan.curve_duration).await?;
        eprintln!(
            "scaling: REST with {level} clients: {:.0} req/s",
            run.req_per_s
        );
        scaling.rest_req_per_s.push(run.req_per_s);
    }
    target.stop(bench).await?;
    Ok(scaling)
}
