//! The command line, and the sizes of each phase derived from it (`--quick` shrinks everything
//! so the smoke test runs in seconds).

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

/// Throughput and cost of order-service against the raw-SQL ceiling and the dedup-table design,
/// measured in one run against the local Postgres and RabbitMQ.
#[derive(Debug, Clone, Parser)]
#[command(name = "order-service-bench", version)]
pub struct Cli {
    /// Orders per consumer repetition: each gets one `order.placed` and one `payment.succeeded`.
    #[arg(long, default_value_t = 2_000)]
    pub orders: usize,

    /// Concurrency of the side-by-side comparison: ceiling connections and REST clients (the
    /// service's own pool size, by default).
    #[arg(long, default_value_t = order_service::config::DEFAULT_DB_MAX_CONNECTIONS as usize)]
    pub clients: usize,

    /// Share of all consumer deliveries that are duplicates (0 ≤ share < 1).
    #[arg(long, default_value_t = 0.2, value_parser = parse_share)]
    pub duplicates: f64,

    /// Seconds each timed ceiling, dedup-table and REST repetition runs.
    #[arg(long, default_value_t = 5.0)]
    pub duration: f64,

    /// Repetitions of each side-by-side measurement; the report gives their median.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub repetitions: u32,

    /// The service binary to spawn (default: `order-service` next to this executable).
    #[arg(long)]
    pub service_bin: Option<PathBuf>,

    /// Where the JSON, Markdown and SVG reports go.
    #[arg(long, default_value = "bench/results")]
    pub out: PathBuf,

    /// Tiny sizes, for the smoke test: proves the harness works, measures nothing useful.
    #[arg(long)]
    pub quick: bool,

    /// Skip the scaling curve (concurrency 1, 2, 4, 8, 16).
    #[arg(long)]
    pub skip_scaling: bool,

    /// Extra `NAME=VALUE` environment for every service process (repeatable), for experiments
    /// such as `--service-env DB_MAX_CONNECTIONS=32`; recorded in the report.
    #[arg(long = "service-env", value_parser = parse_env)]
    pub service_env: Vec<(String, String)>,

    /// Postgres server (the bench creates, and drops at the end, databases of its own).
    #[arg(
        long,
        env = "BENCH_POSTGRES_URL",
        default_value = "postgres://postgres@127.0.0.1:5432/postgres"
    )]
    pub postgres_url: String,

    /// RabbitMQ (the bench declares, and deletes at the end, exchanges and queues of its own).
    #[arg(
        long,
        env = "BENCH_AMQP_URL",
        default_value = order_service::config::DEFAULT_AMQP_URL
    )]
    pub amqp_url: String,
}

fn parse_share(text: &str) -> Result<f64, String> {
    let share: f64 = text.parse().map_err(|e| format!("{e}"))?;
    if (0.0..1.0).contains(&share) {
        Ok(share)
    } else {
        Err("the duplicate share must be at least 0 and below 1".into())
    }
}

fn parse_env(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value)) if !name.is_empty() => Ok((name.to_owned(), value.to_owned())),
        _ => Err("expected NAME=VALUE".into()),
    }
}

/// What each phase does, after `--quick` is applied.
#[derive(Debug, Clone)]
pub struct Plan {
    pub orders: usize,
    pub clients: usize,
    pub duplicate_share: f64,
    pub duration: Duration,
    pub repetitions: u32,
    /// Concurrency levels of the scaling curve; empty when skipped.
    pub scaling_levels: Vec<usize>,
    /// Timed length of one REST or ceiling point of the scaling curve.
    pub scaling_duration: Duration,
    /// Orders per consumer point of the scaling curve.
    pub scaling_orders: usize,
    /// Orders (and REST payments) of the duplicates phase.
    pub duplicate_orders: usize,
    /// Extra environment of every service process.
    pub service_env: Vec<(String, String)>,
}

impl Plan {
    pub fn from_cli(cli: &Cli) -> Self {
        if cli.quick {
            return Self {
                orders: 40,
                clients: 2,
                duplicate_share: cli.duplicates,
                duration: Duration::from_millis(500),
                repetitions: cli.repetitions,
                scaling_levels: if cli.skip_scaling { vec![] } else { vec![1, 2] },
                scaling_duration: Duration::from_millis(300),
                scaling_orders: 20,
                duplicate_orders: 20,
                service_env: cli.service_env.clone(),
            };
        }
        let duration = Duration::from_secs_f64(cli.duration.max(0.1));
        Self {
            orders: cli.orders.max(1),
            clients: cli.clients.max(1),
            duplicate_share: cli.duplicates,
            duration,
            repetitions: cli.repetitions,
            scaling_levels: if cli.skip_scaling {
                vec![]
            } else {
                vec![1, 2, 4, 8, 16]
            },
            scaling_duration: (duration / 2).max(Duration::from_secs(1)),
            scaling_orders: (cli.orders / 4).max(50),
            duplicate_orders: cli.orders.clamp(1, 1_000),
            service_env: cli.service_env.clone(),
        }
    }

    /// Duplicate deliveries to add to `unique` ones so that they are `duplicate_share` of all.
    pub fn duplicates_for(&self, unique: usize) -> usize {
        let share = self.duplicate_share;
        (unique as f64 * share / (1.0 - share)).round() as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(args: &[&str]) -> Plan {
        let mut argv = vec!["order-service-bench"];
        argv.extend_from_slice(args);
        Plan::from_cli(&Cli::parse_from(argv))
    }

    #[test]
    fn a_fifth_of_all_deliveries_are_duplicates_by_default() {
        let plan = plan(&[]);
        assert_eq!(plan.duplicates_for(4_000), 1_000);
        assert_eq!(plan.scaling_levels, vec![1, 2, 4, 8, 16]);
    }

    #[test]
    fn no_duplicate_share_adds_none() {
        assert_eq!(plan(&["--duplicates", "0"]).duplicates_for(4_000), 0);
    }

    #[test]
    fn a_share_of_one_or_more_is_refused() {
        assert!(Cli::try_parse_from(["b", "--duplicates", "1"]).is_err());
        assert!(Cli::try_parse_from(["b", "--repetitions", "0"]).is_err());
        assert!(Cli::try_parse_from(["b", "--service-env", "NO_VALUE"]).is_err());
    }

    #[test]
    fn quick_shrinks_every_phase_and_skip_scaling_empties_the_curve() {
        let quick = plan(&["--quick", "--skip-scaling"]);
        assert!(quick.orders < 100);
        assert!(quick.scaling_levels.is_empty());
    }
}
