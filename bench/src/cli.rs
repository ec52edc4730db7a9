//! The command line, and the sizes of each phase derived from it (`--quick` shrinks everything
//! so the smoke test runs in seconds).

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use clap::builder::TypedValueParser as _;

/// Deliveries per transaction of the batched raw designs: the consumer's default
/// batch (`AMQP_BATCH_SIZE`), so that both batch alike.
pub const DEFAULT_BATCH_SIZE: usize = order_service::config::DEFAULT_AMQP_BATCH_SIZE as usize;

/// The consumer batch sizes (`AMQP_BATCH_SIZE`) of the batch-size curve.
pub const BATCH_CURVE: [usize; 4] = [1, 4, 16, 64];

/// The Postgres server the bench (and its tests) create their databases on.
pub const DEFAULT_POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// The concurrency levels of the scaling curve.
pub const SCALING_CURVE: [usize; 5] = [1, 2, 4, 8, 16];

/// Throughput and cost of order-service against the raw-SQL ceiling and the dedup-table design,
/// measured in one run against the local Postgres and RabbitMQ.
#[derive(Debug, Clone, Parser)]
#[command(name = "order-service-bench", version)]
pub struct Cli {
    /// Orders per consumer repetition: each is seeded pending and gets one `payment.succeeded`
    /// (plus duplicates).
    #[arg(long, default_value_t = 4_000)]
    pub orders: usize,

    /// Concurrency of the side-by-side comparison: raw-SQL connections and REST clients (the
    /// service's own pool size, by default).
    #[arg(long, default_value_t = order_service::config::DEFAULT_DB_MAX_CONNECTIONS as usize)]
    pub clients: usize,

    /// Share of all consumer deliveries that are duplicates (0 ≤ share < 1).
    #[arg(long, default_value_t = 0.2, value_parser = parse_share)]
    pub duplicates: f64,

    /// Deliveries per transaction of the batched raw designs (natural and dedup-table).
    #[arg(long, default_value_t = DEFAULT_BATCH_SIZE, value_parser = clap::value_parser!(u16).range(1..).map(usize::from))]
    pub batch_size: usize,

    /// Seconds each timed raw-SQL and REST repetition runs.
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

    /// Skip the batch-size curve (consumer `AMQP_BATCH_SIZE` and raw batches of 1, 4, 16, 64).
    #[arg(long)]
    pub skip_batch_curve: bool,

    /// Extra `NAME=VALUE` environment for every service process (repeatable), for experiments
    /// such as `--service-env DB_MAX_CONNECTIONS=32`; recorded in the report.
    #[arg(long = "service-env", value_parser = parse_env)]
    pub service_env: Vec<(String, String)>,

    /// Extra `NAME=VALUE` environment for the service of the REST measurements only, after
    /// `--service-env` (repeatable): `--rest-service-env AMQP_ENABLED=false` measures REST without
    /// the outbox relay, so the difference is what publishing its events costs; recorded in the
    /// report's command.
    #[arg(long = "rest-service-env", value_parser = parse_env)]
    pub rest_service_env: Vec<(String, String)>,

    /// Postgres server (the bench creates, and drops at the end, databases of its own).
    #[arg(
        long,
        env = "BENCH_POSTGRES_URL",
        default_value = DEFAULT_POSTGRES_URL
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
    /// Deliveries per transaction of the batched raw designs.
    pub batch_size: usize,
    /// Concurrency levels of the scaling curve; empty when skipped.
    pub scaling_levels: Vec<usize>,
    /// Batch sizes of the batch-size curve; empty when skipped.
    pub batch_sizes: Vec<usize>,
    /// Timed length of one REST or raw-SQL point of either curve.
    pub curve_duration: Duration,
    /// Orders per consumer point of either curve.
    pub curve_orders: usize,
    /// Orders (and REST payments) of the duplicates phase.
    pub duplicate_orders: usize,
    /// Extra environment of every service process.
    pub service_env: Vec<(String, String)>,
    /// Extra environment of the REST measurements' service, after `service_env`.
    pub rest_service_env: Vec<(String, String)>,
}

impl Plan {
    /// What `--service-env` sets `name` to, when it sets it to a value of `T`.
    pub fn service_env_value<T: std::str::FromStr>(&self, name: &str) -> Option<T> {
        self.service_env
            .iter()
            .rev()
            .find(|(key, _)| key == name)
            .and_then(|(_, value)| value.parse().ok())
    }

    pub fn from_cli(cli: &Cli) -> Self {
        let unless = |skip: bool, levels: &[usize]| if skip { vec![] } else { levels.to_vec() };
        if cli.quick {
            return Self {
                orders: 40,
                clients: 2,
                duplicate_share: cli.duplicates,
                duration: Duration::from_millis(500),
                repetitions: cli.repetitions,
                batch_size: cli.batch_size.min(4),
                scaling_levels: unless(cli.skip_scaling, &SCALING_CURVE[..2]),
                batch_sizes: unless(cli.skip_batch_curve, &BATCH_CURVE[..2]),
                curve_duration: Duration::from_millis(300),
                // Enough work for the service's CPU to be measurable per point: /proc counts it
                // in 10 ms ticks, and 20 orders at batches of 4 sometimes took less than one.
                curve_orders: 100,
                duplicate_orders: 20,
                service_env: cli.service_env.clone(),
                rest_service_env: cli.rest_service_env.clone(),
            };
        }
        let duration = Duration::from_secs_f64(cli.duration.max(0.1));
        Self {
            orders: cli.orders.max(1),
            clients: cli.clients.max(1),
            duplicate_share: cli.duplicates,
            duration,
            repetitions: cli.repetitions,
            batch_size: cli.batch_size,
            scaling_levels: unless(cli.skip_scaling, &SCALING_CURVE),
            batch_sizes: unless(cli.skip_batch_curve, &BATCH_CURVE),
            curve_duration: (duration / 2).max(Duration::from_secs(1)),
            curve_orders: (cli.orders / 4).max(50),
            duplicate_orders: cli.orders.clamp(1, 1_000),
            service_env: cli.service_env.clone(),
            rest_service_env: cli.rest_service_env.clone(),
        }
    }

    /// Duplicate deliveries to add to `unique` ones so that they are `duplicate_share` of all.
    pub fn duplicates_for(&self, unique: usize) -> usize {
        crate::workload::duplicates_for(unique, self.duplicate_share)
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
        assert_eq!(plan.batch_sizes, vec![1, 4, 16, 64]);
        assert_eq!(plan.batch_size, DEFAULT_BATCH_SIZE);
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
        assert!(Cli::try_parse_from(["b", "--batch-size", "0"]).is_err());
    }

    #[test]
    fn quick_shrinks_every_phase_and_the_skip_flags_empty_the_curves() {
        let quick = plan(&["--quick", "--skip-scaling"]);
        assert!(quick.orders < 100);
        assert!(quick.scaling_levels.is_empty());
        assert_eq!(quick.batch_sizes, vec![1, 4]);
        assert!(plan(&["--skip-batch-curve"]).batch_sizes.is_empty());
        assert_eq!(plan(&["--batch-size", "8"]).batch_size, 8);
    }

    #[test]
    fn the_report_names_the_prefetch_and_pool_service_env_sets() {
        let plan = plan(&[
            "--service-env",
            "AMQP_PREFETCH=64",
            "--service-env",
            "AMQP_PREFETCH=32",
        ]);
        assert_eq!(plan.service_env_value::<u16>("AMQP_PREFETCH"), Some(32));
        assert_eq!(plan.service_env_value::<u32>("DB_MAX_CONNECTIONS"), None);
    }

    #[test]
    fn the_rest_service_env_is_kept_apart_from_the_one_every_service_gets() {
        let plan = plan(&["--rest-service-env", "AMQP_ENABLED=false"]);
        assert!(plan.service_env.is_empty());
        assert_eq!(
            plan.rest_service_env,
            [("AMQP_ENABLED".to_owned(), "false".to_owned())]
        );
    }
}
