//! `order-service-bench`: throughput and cost of order-service against the one-statement
//! reference (the minimal durable writes of a payment as one statement), the service's own
//! transaction in raw SQL and the dedup-table design, measured side by side in one run against
//! the local Postgres and RabbitMQ. Prints a table and writes JSON, Markdown and SVG charts under
//! `bench/results/` (bench/README.md).
//!
//! ```sh
//! cargo build --release --workspace && ./target/release/order-service-bench
//! ```
//!
//! Repetitions are interleaved (the raw designs in a rotating order, consumer, REST; then again)
//! so that the ratios compare figures measured close together on a shared machine. Everything the bench
//! creates — databases, exchanges, queues, service processes — is removed at the end, on error
//! and on Ctrl-C too.

mod app_layer;
mod batch_curve;
mod batched;
mod charts;
mod cli;
mod client;
mod consumer;
mod costs;
mod cpu;
mod cte;
mod duplicates;
mod format;
mod machine;
mod markdown;
mod measure;
mod multi;
mod output;
mod pgstat;
mod ratios;
mod raw;
mod report;
mod resources;
mod rest;
#[cfg(test)]
mod sample;
mod scaling;
mod scratch;
mod service;
#[cfg(test)]
mod sql_tests;
mod stats;
mod summary;
mod svg;
mod workload;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, anyhow, bail};
use clap::Parser;

use cli::{Cli, Plan};
use scratch::Scratch;

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
        outcome = measure::all(&bench) => outcome,
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
    let written = output::write(&report, &cli.out, &stamp)?;
    println!("{}", summary::table(&report));
    println!("report: {}", written.markdown.display());
    println!("json:   {}", written.json.display());
    for svg in written.svgs {
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
