//! What a process costs, read from `/proc` (Linux): peak resident memory (`VmHWM` in
//! `/proc/<pid>/status`), CPU time (`utime + stime` in `/proc/<pid>/stat`), and how the machine's
//! CPU time during a phase split between the service, Postgres, RabbitMQ, the bench itself and
//! everything else — the last share says how much other load disturbed the measurement.

use std::fs;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde::Serialize;

/// Clock ticks per second of the `/proc` CPU counters (`getconf CLK_TCK`; 100 on Linux).
fn ticks_per_second() -> f64 {
    static TICKS: OnceLock<f64> = OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// `(comm, utime + stime, cutime + cstime)` in ticks, from the text of `/proc/<pid>/stat`.
fn parse_stat(text: &str) -> Option<(String, u64, u64)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_owned();
    // Fields after the command: state is the 3rd field, utime the 14th … cstime the 17th.
    let rest: Vec<&str> = text.get(close + 2..)?.split_whitespace().collect();
    let field = |i: usize| rest.get(i).and_then(|v| v.parse::<u64>().ok());
    Some((comm, field(11)? + field(12)?, field(13)? + field(14)?))
}

/// CPU time a process has used so far (its own threads, not its children).
pub fn process_cpu(pid: u32) -> Option<Duration> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, ticks, _) = parse_stat(&text)?;
    Some(Duration::from_secs_f64(ticks as f64 / ticks_per_second()))
}

/// Peak resident set size in KiB (`VmHWM`).
pub fn peak_rss_kib(pid: u32) -> Option<u64> {
    let text = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    parse_kib(&text, "VmHWM:")
}

/// A `<key> <n> kB` line of a `/proc` file.
pub fn parse_kib(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find_map(|line| line.strip_prefix(key))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

/// CPU counters of the machine and of the processes we care about, in ticks.
#[derive(Debug, Clone, Copy, Default)]
struct Counters {
    busy: u64,
    service: u64,
    postgres: u64,
    rabbitmq: u64,
    bench: u64,
}

fn machine_busy() -> u64 {
    let Ok(text) = fs::read_to_string("/proc/stat") else {
        return 0;
    };
    let Some(line) = text.lines().next() else {
        return 0;
    };
    let values: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal: everything but idle and iowait is busy.
    values
        .iter()
        .take(8)
        .enumerate()
        .filter(|(i, _)| *i != 3 && *i != 4)
        .map(|(_, v)| v)
        .sum()
}

fn read_counters(service: Option<u32>) -> Counters {
    let mut counters = Counters {
        busy: machine_busy(),
        ..Counters::default()
    };
    let me = std::process::id();
    let Ok(entries) = fs::read_dir("/proc") else {
        return counters;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(text) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((comm, own, children)) = parse_stat(&text) else {
            continue;
        };
        if Some(pid) == service {
            counters.service += own;
        } else if pid == me {
            counters.bench += own;
        } else if comm == "postgres" {
            // The postmaster's reaped children carry the CPU of backends that exited meanwhile.
            counters.postgres += own + children;
        } else if comm == "beam.smp" {
            counters.rabbitmq += own;
        }
    }
    counters
}

/// Where the machine's CPU went during a phase, in CPU seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CpuSplit {
    pub wall_s: f64,
    pub cores: usize,
    pub service_s: f64,
    pub postgres_s: f64,
    pub rabbitmq_s: f64,
    pub bench_s: f64,
    /// Everything else that ran meanwhile (other users of this machine).
    pub other_s: f64,
    pub idle_s: f64,
}

/// Started at the beginning of a phase; [`CpuMeter::stop`] gives the split since then.
pub struct CpuMeter {
    service: Option<u32>,
    started: Instant,
    start: Counters,
}

impl CpuMeter {
    pub fn start(service: Option<u32>) -> Self {
        Self {
            service,
            started: Instant::now(),
            start: read_counters(service),
        }
    }

    pub fn stop(&self) -> CpuSplit {
        let end = read_counters(self.service);
        let tick = ticks_per_second();
        let secs = |a: u64, b: u64| a.saturating_sub(b) as f64 / tick;
        let wall_s = self.started.elapsed().as_secs_f64();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let busy = secs(end.busy, self.start.busy);
        let service_s = secs(end.service, self.start.service);
        let postgres_s = secs(end.postgres, self.start.postgres);
        let rabbitmq_s = secs(end.rabbitmq, self.start.rabbitmq);
        let bench_s = secs(end.bench, self.start.bench);
        let ours = service_s + postgres_s + rabbitmq_s + bench_s;
        CpuSplit {
            wall_s,
            cores,
            service_s,
            postgres_s,
            rabbitmq_s,
            bench_s,
            other_s: (busy - ours).max(0.0),
            idle_s: (wall_s * cores as f64 - busy).max(0.0),
        }
    }
}

impl CpuSplit {
    /// Sums splits of several phases.
    pub fn add(&mut self, other: &CpuSplit) {
        self.wall_s += other.wall_s;
        self.cores = other.cores.max(self.cores);
        self.service_s += other.service_s;
        self.postgres_s += other.postgres_s;
        self.rabbitmq_s += other.rabbitmq_s;
        self.bench_s += other.bench_s;
        self.other_s += other.other_s;
        self.idle_s += other.idle_s;
    }

    /// Share of the machine's capacity (cores × wall time) used by others.
    pub fn other_share(&self) -> f64 {
        let capacity = self.wall_s * self.cores as f64;
        if capacity > 0.0 {
            self.other_s / capacity
        } else {
            0.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_are_parsed_after_the_command_even_with_spaces_in_it() {
        let line = "4242 (tokio worker 1) S 1 2 3 4 5 6 7 8 9 10 150 50 7 3 20 0 1 0";
        assert_eq!(parse_stat(line), Some(("tokio worker 1".into(), 200, 10)));
    }

    #[test]
    fn vmhwm_is_read_in_kib() {
        let status = "Name:\torder-service\nVmPeak:\t  900 kB\nVmHWM:\t   34512 kB\n";
        assert_eq!(parse_kib(status, "VmHWM:"), Some(34_512));
        assert_eq!(parse_kib(status, "VmRSS:"), None);
    }

    #[test]
    fn this_process_has_a_peak_rss_and_cpu_time() {
        let me = std::process::id();
        assert!(peak_rss_kib(me).is_some_and(|kib| kib > 0));
        assert!(process_cpu(me).is_some());
    }
}
