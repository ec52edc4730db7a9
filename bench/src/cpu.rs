//! Where the machine's CPU went during a phase: the service, the Postgres server under test (its
//! postmaster and the children it forks), RabbitMQ, the bench itself, the kernel's interrupt work
//! (loopback networking, mostly) and every other process — the last share says how much other
//! load disturbed the measurement. Read from `/proc/stat` and `/proc/<pid>/stat`.

use std::fs;
use std::time::Instant;

use serde::Serialize;

use crate::resources::{parse_stat, postmaster, ticks_per_second};

/// CPU counters of the machine and of the processes we care about, in ticks.
#[derive(Debug, Clone, Copy, Default)]
struct Counters {
    /// user + nice + system.
    busy: u64,
    /// irq + softirq + steal: not charged to any process.
    interrupts: u64,
    service: u64,
    postgres: u64,
    rabbitmq: u64,
    bench: u64,
}

/// `(user + nice + system, irq + softirq + steal)` ticks of the whole machine.
fn machine_busy() -> (u64, u64) {
    let Ok(text) = fs::read_to_string("/proc/stat") else {
        return (0, 0);
    };
    let values: Vec<u64> = text
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    let at = |i: usize| values.get(i).copied().unwrap_or(0);
    // user nice system idle iowait irq softirq steal
    (at(0) + at(1) + at(2), at(5) + at(6) + at(7))
}

fn read_counters(service: Option<u32>) -> Counters {
    let (busy, interrupts) = machine_busy();
    let mut counters = Counters {
        busy,
        interrupts,
        ..Counters::default()
    };
    let postmaster = postmaster();
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
        let Some(stat) = parse_stat(&text) else {
            continue;
        };
        let under_test = if postmaster == 0 {
            stat.comm == "postgres"
        } else {
            pid == postmaster || stat.parent == postmaster
        };
        if Some(pid) == service {
            counters.service += stat.own;
        } else if pid == me {
            counters.bench += stat.own;
        } else if under_test {
            // The postmaster's reaped children carry the CPU of backends that exited meanwhile.
            counters.postgres += stat.own + if pid == postmaster { stat.children } else { 0 };
        } else if stat.comm == "beam.smp" {
            counters.rabbitmq += stat.own;
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
    /// Interrupt work (loopback networking, mostly) and time the hypervisor took.
    pub interrupts_s: f64,
    /// Every other process that ran meanwhile (other users of this machine).
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
        let interrupts_s = secs(end.interrupts, self.start.interrupts);
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
            interrupts_s,
            other_s: (busy - ours).max(0.0),
            idle_s: (wall_s * cores as f64 - busy - interrupts_s).max(0.0),
        }
    }
}

/// CPU milliseconds one operation (a transaction, message or request) cost, by process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CpuPerOp {
    pub service_ms: f64,
    pub postgres_ms: f64,
    pub rabbitmq_ms: f64,
    pub bench_ms: f64,
    pub interrupts_ms: f64,
    /// All of the above: what one operation takes from the machine.
    pub total_ms: f64,
}

impl CpuPerOp {
    /// The field-wise median of several runs.
    pub fn median_of(runs: &[CpuPerOp]) -> Self {
        let pick = |f: fn(&CpuPerOp) -> f64| {
            crate::stats::median(&runs.iter().map(f).collect::<Vec<_>>()).unwrap_or(0.0)
        };
        Self {
            service_ms: pick(|c| c.service_ms),
            postgres_ms: pick(|c| c.postgres_ms),
            rabbitmq_ms: pick(|c| c.rabbitmq_ms),
            bench_ms: pick(|c| c.bench_ms),
            interrupts_ms: pick(|c| c.interrupts_ms),
            total_ms: pick(|c| c.total_ms),
        }
    }
}

impl CpuSplit {
    /// What each of `ops` operations cost on average.
    pub fn per_op(&self, ops: u64) -> CpuPerOp {
        let ms = |secs: f64| secs * 1_000.0 / ops.max(1) as f64;
        CpuPerOp {
            service_ms: ms(self.service_s),
            postgres_ms: ms(self.postgres_s),
            rabbitmq_ms: ms(self.rabbitmq_s),
            bench_ms: ms(self.bench_s),
            interrupts_ms: ms(self.interrupts_s),
            total_ms: ms(self.service_s
                + self.postgres_s
                + self.rabbitmq_s
                + self.bench_s
                + self.interrupts_s),
        }
    }

    /// Sums splits of several phases.
    pub fn add(&mut self, other: &CpuSplit) {
        self.wall_s += other.wall_s;
        self.cores = other.cores.max(self.cores);
        self.service_s += other.service_s;
        self.postgres_s += other.postgres_s;
        self.rabbitmq_s += other.rabbitmq_s;
        self.bench_s += other.bench_s;
        self.interrupts_s += other.interrupts_s;
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
    fn cpu_per_operation_divides_each_share_by_the_count() {
        let split = CpuSplit {
            service_s: 1.0,
            postgres_s: 2.0,
            bench_s: 0.5,
            ..CpuSplit::default()
        };
        let per_op = split.per_op(1_000);
        assert_eq!(per_op.service_ms, 1.0);
        assert_eq!(per_op.postgres_ms, 2.0);
        assert_eq!(per_op.total_ms, 3.5);
        let median = CpuPerOp::median_of(&[per_op, split.per_op(500), split.per_op(2_000)]);
        assert_eq!(median.total_ms, 3.5);
    }
}
