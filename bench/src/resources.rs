//! What a process costs, read from `/proc` (Linux): peak resident memory (`VmHWM` in
//! `/proc/<pid>/status`) and CPU time (`utime + stime` in `/proc/<pid>/stat`); which processes
//! are the Postgres server under test. `cpu.rs` builds the machine-wide split on these.

use std::fs;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// Clock ticks per second of the `/proc` CPU counters (`getconf CLK_TCK`; 100 on Linux).
pub(crate) fn ticks_per_second() -> f64 {
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

/// One process's line of `/proc/<pid>/stat`: CPU times in ticks.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Stat {
    pub comm: String,
    pub parent: u32,
    /// `utime + stime`.
    pub own: u64,
    /// `cutime + cstime`: children that exited and were waited for.
    pub children: u64,
}

pub(crate) fn parse_stat(text: &str) -> Option<Stat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_owned();
    // Fields after the command: state is the 3rd field, utime the 14th … cstime the 17th.
    let rest: Vec<&str> = text.get(close + 2..)?.split_whitespace().collect();
    let field = |i: usize| rest.get(i).and_then(|v| v.parse::<u64>().ok());
    Some(Stat {
        comm,
        parent: u32::try_from(field(1)?).ok()?,
        own: field(11)? + field(12)?,
        children: field(13)? + field(14)?,
    })
}

/// The postmaster of the Postgres server under test (other clusters on the machine are "other").
static POSTMASTER: AtomicU32 = AtomicU32::new(0);

/// The pid [`find_postmaster`] found, or 0.
pub fn postmaster() -> u32 {
    POSTMASTER.load(Ordering::Relaxed)
}

/// Reads the postmaster's pid from `<data_directory>/postmaster.pid` (needs a local server and
/// read access to its data directory; without them every `postgres` process is counted).
pub fn find_postmaster(data_directory: &str) {
    let pid = fs::read_to_string(format!("{data_directory}/postmaster.pid"))
        .ok()
        .and_then(|text| text.lines().next().and_then(|l| l.trim().parse().ok()))
        .unwrap_or(0);
    POSTMASTER.store(pid, Ordering::Relaxed);
}

/// CPU time a process has used so far (its own threads, not its children).
pub fn process_cpu(pid: u32) -> Option<Duration> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let stat = parse_stat(&text)?;
    Some(Duration::from_secs_f64(
        stat.own as f64 / ticks_per_second(),
    ))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_are_parsed_after_the_command_even_with_spaces_in_it() {
        let line = "4242 (tokio worker 1) S 17 2 3 4 5 6 7 8 9 10 150 50 7 3 20 0 1 0";
        let stat = parse_stat(line).expect("parsed");
        assert_eq!(stat.comm, "tokio worker 1");
        assert_eq!((stat.parent, stat.own, stat.children), (17, 200, 10));
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
