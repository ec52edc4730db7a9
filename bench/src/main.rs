//! `order-service-bench`: throughput and cost of order-service against the raw-SQL ceiling and
//! the dedup-table design, measured side by side in one run against the local Postgres and
//! RabbitMQ. Prints a table and writes JSON, Markdown and an SVG chart under `bench/results/`.
//!
//! ```sh
//! cargo build --release --workspace && ./target/release/order-service-bench
//! ```
//!
//! Repetitions are interleaved (ceiling, dedup-table, consumer, REST; then again) so that the
//! ratios compare figures measured close together on a shared machine. Everything the bench
//! creates — databases, exchanges, queues, service processes — is removed at the end, on error
//! and on Ctrl-C too.

mod ceiling;
mod cli;
mod client;
mod consumer;
mod cpu;
mod duplicates;
mod machine;
mod markdown;
mod pgstat;
mod report;
mod resources;
mod rest;
#[cfg(test)]
mod sample;
mod scratch;
mod service;
mod stats;
mod summary;
mod svg;
mod workload;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, anyhow, bail};
use clap::Parser;

use ceiling::Design;
use cli::{Cli, Plan};
use report::{ConsumerSummary, Ratios, Report, Resources, RestSummary, RowsPerPayment, Scaling};
use scratch::Scratch;
use stats::{Latency, Series, median};

/// What every phase needs.
pub struct Bench {
    pub scratch: Scratch,
    pub service_bin: PathBuf,
    pub plan: Plan,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let service_bin = service_binary(&cli)?;
    let plan = Plan::from_cli(&cli);
    let scratch = Scratch::open(&cli.postgres_url, &cli.amqp_url).await?;
    let bench = Bench {
        scratch,
        service_bin,
        plan,
    };
    let started_at = chrono::Utc::now();
    let outcome = tokio::select! {
        outcome = measure(&bench) => outcome,
        () = order_service::startup::shutdown_signal() => Err(anyhow!("interrupted")),
    };
    // Service processes were killed when their handles dropped; now the databases and queues.
    bench.scratch.cleanup().await;
    let mut report = match outcome {
        Ok(report) => report,
        Err(e) => {
            eprintln!("service logs kept in {}", bench.scratch.log_dir.display());
            return Err(e);
        }
    };
    report.started_at = started_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let stamp = started_at.format("%Y%m%dT%H%M%SZ").to_string();
    let written = report.write(&cli.out, &stamp)?;
    println!("{}", summary::table(&report));
    println!("report: {}", written.markdown.display());
    println!("json:   {}", written.json.display());
    if let Some(svg) = written.svg {
        println!("chart:  {}", svg.display());
    }
    let _ = std::fs::remove_dir_all(&bench.scratch.log_dir);
    Ok(())
}

/// `--service-bin`, or `order-service` next to this executable (the workspace shares one target
/// directory, so `cargo build --workspace` puts both there).
fn service_binary(cli: &Cli) -> anyhow::Result<PathBuf> {
    let me = std::env::current_exe().context("cannot locate this executable")?;
    let path = match &cli.service_bin {
        Some(path) => path.clone(),
        None => me.with_file_name("order-service"),
    };
    if !path.is_file() {
        bail!(
            "no service binary at {} (build both binaries with `cargo build --release --workspace`, \
             or pass --service-bin)",
            path.display()
        );
    }
    let modified = |p: &PathBuf| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    if let (Some(service), Some(bench)) = (modified(&path), modified(&me))
        && bench
            .duration_since(service)
            .is_ok_and(|d| d.as_secs() > 300)
    {
        eprintln!(
            "warning: {} is older than this bench; `cargo build --release --workspace` rebuilds both",
            path.display()
        );
    }
    Ok(path)
}

async fn measure(bench: &Bench) -> anyhow::Result<Report> {
    let started = Instant::now();
    let plan = &bench.plan;
    let mut machine = machine::Machine::describe(&bench.scratch.admin).await;
    let ceiling_db = ceiling::prepare(&bench.scratch).await?;
    let (mut natural, mut dedup) = (vec![], vec![]);
    let (mut consumer_runs, mut rest_runs, mut open_runs) = (vec![], vec![], vec![]);
    let mut peak_rss_kib = 0;
    for rep in 0..plan.repetitions {
        eprintln!("repetition {} of {}", rep + 1, plan.repetitions);
        let designs = if rep % 2 == 0 {
            [Design::Natural, Design::DedupTable]
        } else {
            [Design::DedupTable, Design::Natural]
        };
        for design in designs {
            let run = ceiling::run(&ceiling_db, design, plan.clients, plan.duration).await?;
            eprintln!(
                "  ceiling, {design:?}: {:.0} tx/s ({} transactions)",
                run.tx_per_s, run.transactions
            );
            match design {
                Design::Natural => natural.push(run),
                Design::DedupTable => dedup.push(run),
            }
        }
        let run = consumer::run(bench, &format!("consumer{rep}"), plan.orders, None).await?;
        eprintln!("  consumer: {:.0} msgs/s", run.msgs_per_s);
        peak_rss_kib = peak_rss_kib.max(run.peak_rss_kib);
        consumer_runs.push(run);

        let target = rest::Target::start(bench, &format!("rest{rep}")).await?;
        let closed = rest::closed_loop(&target, plan.clients, plan.duration).await?;
        eprintln!("  REST: {:.0} req/s", closed.req_per_s);
        let open = rest::open_loop(&target, closed.req_per_s / 2.0, plan.duration).await?;
        eprintln!(
            "  REST open loop at {:.0} req/s: p99 {:.1} ms",
            open.target_per_s, open.latency.p99_ms
        );
        peak_rss_kib = peak_rss_kib.max(target.service.peak_rss_kib());
        target.stop(bench).await?;
        rest_runs.push(closed);
        open_runs.push(open);
    }

    eprintln!("duplicates");
    let duplicates = duplicates::run(bench).await?;
    let scaling = if plan.scaling_levels.is_empty() {
        None
    } else {
        Some(scale(bench, &ceiling_db).await?)
    };
    bench.scratch.drop_database(&ceiling_db).await?;
    machine.load_at_end = machine::load_average();

    let ceiling = Series::new("tx/s", natural.iter().map(|r| r.tx_per_s).collect());
    let dedup_table = Series::new("tx/s", dedup.iter().map(|r| r.tx_per_s).collect());
    let consumer = Series::new(
        "msgs/s",
        consumer_runs.iter().map(|r| r.msgs_per_s).collect(),
    );
    let rest = Series::new("req/s", rest_runs.iter().map(|r| r.req_per_s).collect());
    let rows = |runs: &[ceiling::Run]| {
        median(&runs.iter().map(|r| r.rows_per_tx).collect::<Vec<_>>()).unwrap_or(0.0)
    };
    Ok(Report {
        started_at: String::new(),
        command: std::env::args().collect::<Vec<_>>().join(" "),
        elapsed_s: started.elapsed().as_secs_f64(),
        machine,
        settings: report::Settings {
            orders: plan.orders,
            clients: plan.clients,
            duplicate_share: plan.duplicate_share,
            duration_s: plan.duration.as_secs_f64(),
            repetitions: plan.repetitions,
            // The child runs with a cleared environment, so it gets exactly the defaults.
            service_prefetch: order_service::config::DEFAULT_AMQP_PREFETCH,
            service_pool: order_service::config::DEFAULT_DB_MAX_CONNECTIONS,
            service_bin: bench.service_bin.display().to_string(),
            service_env: plan
                .service_env
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect(),
        },
        ratios: Ratios::of(&ceiling, &dedup_table, &consumer, &rest),
        rows_per_payment: RowsPerPayment {
            natural: rows(&natural),
            dedup_table: rows(&dedup),
        },
        ceiling,
        dedup_table,
        resources: Resources::of((&natural, &dedup), &consumer_runs, &rest_runs, peak_rss_kib),
        consumer: ConsumerSummary {
            series: consumer,
            runs: consumer_runs,
        },
        rest: RestSummary {
            series: rest,
            latency: Latency::median_of(&rest_runs.iter().map(|r| r.latency).collect::<Vec<_>>()),
            open_loop_target_per_s: median(
                &open_runs.iter().map(|r| r.target_per_s).collect::<Vec<_>>(),
            ),
            open_loop_latency: Latency::median_of(
                &open_runs.iter().map(|r| r.latency).collect::<Vec<_>>(),
            ),
            errors: rest_runs.iter().map(|r| r.errors).sum::<u64>()
                + open_runs.iter().map(|r| r.errors).sum::<u64>(),
            runs: rest_runs,
            open_loop_runs: open_runs,
        },
        duplicates,
        scaling,
    })
}

/// One run per concurrency level and door (shorter than the side-by-side runs).
async fn scale(bench: &Bench, ceiling_db: &scratch::Db) -> anyhow::Result<Scaling> {
    let plan = &bench.plan;
    let levels = plan.scaling_levels.clone();
    let mut scaling = Scaling {
        levels: levels.clone(),
        ceiling_tx_per_s: vec![],
        consumer_msgs_per_s: vec![],
        rest_req_per_s: vec![],
    };
    for &level in &levels {
        let run = ceiling::run(ceiling_db, Design::Natural, level, plan.scaling_duration).await?;
        eprintln!("scaling: ceiling at {level}: {:.0} tx/s", run.tx_per_s);
        scaling.ceiling_tx_per_s.push(run.tx_per_s);
    }
    for &level in &levels {
        let prefetch = Some(u16::try_from(level).unwrap_or(u16::MAX));
        let label = format!("scaling{level}");
        let run = consumer::run(bench, &label, plan.scaling_orders, prefetch).await?;
        eprintln!(
            "scaling: consumer at prefetch {level}: {:.0} msgs/s",
            run.msgs_per_s
        );
        scaling.consumer_msgs_per_s.push(run.msgs_per_s);
    }
    let target = rest::Target::start(bench, "rest-scaling").await?;
    for &level in &levels {
        let run = rest::closed_loop(&target, level, plan.scaling_duration).await?;
        eprintln!(
            "scaling: REST with {level} clients: {:.0} req/s",
            run.req_per_s
        );
        scaling.rest_req_per_s.push(run.req_per_s);
    }
    target.stop(bench).await?;
    Ok(scaling)
}
