//! A pg_auto_failover formation of the test's own: a monitor and three Postgres nodes (one
//! primary, two synchronous standbys) on free loopback ports, under a temporary directory, run
//! as the `postgres` user with Debian's `postgresql-15-auto-failover`. The monitor's health
//! checks are shortened (`pgautofailover.*` settings) so that a failover takes seconds, not a
//! minute. Each node (its `pg_autoctl` keeper and the Postgres it runs) is a process group of
//! its own, so the test can kill it, freeze it (SIGSTOP: its sockets stay open and silent, as in
//! a paused VM) and thaw it as one. Everything is killed and the directory removed when the
//! formation is dropped, pass or fail.

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use sqlx::{Connection, PgConnection};

use crate::{eventually, free_port, log_tail};

const PG_BIN: &str = "/usr/lib/postgresql/15/bin";
/// Generous: a give-up bound for a formation that does not come up, not a measure.
const SETTLE: Duration = Duration::from_secs(120);
pub const NODES: usize = 3;
/// How often a node that waits to rejoin has the primary asked for a checkpoint.
const CHECKPOINT_EVERY: Duration = Duration::from_secs(3);

/// The monitor's failure detection, shortened from the defaults (a 5 s health check period,
/// 20 s before a node is considered unhealthy, 30 s for a primary to demote itself).
const MONITOR_SETTINGS: [(&str, &str); 6] = [
    ("health_check_period", "1000"),
    ("health_check_timeout", "1000"),
    ("health_check_max_retries", "1"),
    ("health_check_retry_delay", "500"),
    ("node_considered_unhealthy_timeout", "2000"),
    ("primary_demote_timeout", "3000"),
];

pub struct Formation {
    dir: PathBuf,
    monitor_port: u16,
    monitor: Option<Child>,
    pub ports: [u16; NODES],
    nodes: [Option<Child>; NODES],
}

/// A node as the monitor sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeState {
    pub port: u16,
    pub reported: String,
    pub goal: String,
}

impl Formation {
    /// The monitor, then each node in turn (the first becomes the primary), each waited for
    /// until the monitor reports it primary or secondary.
    pub async fn start() -> Self {
        let started = std::time::Instant::now();
        let dir = std::env::temp_dir().join(format!(
            "order-service-paf-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        let chown = Command::new("chown")
            .args(["postgres"])
            .arg(&dir)
            .status()
            .expect("chown");
        assert!(chown.success(), "chown {}", dir.display());
        let mut formation = Self {
            monitor_port: free_port(),
            ports: std::array::from_fn(|_| free_port()),
            monitor: None,
            nodes: std::array::from_fn(|_| None),
            dir,
        };
        let monitor_data = formation.dir.join("monitor");
        let port = formation.monitor_port.to_string();
        formation.monitor = Some(formation.pg_autoctl(
            "monitor",
            &[
                "create",
                "monitor",
                "--pgdata",
                path(&monitor_data),
                "--pgport",
                &port,
                "--hostname",
                "127.0.0.1",
                "--auth",
                "trust",
                "--no-ssl",
                "--pgctl",
                &format!("{PG_BIN}/pg_ctl"),
                "--run",
            ],
        ));
        let mut monitor = eventually("the monitor to accept connections", SETTLE, || async {
            PgConnection::connect(&formation.monitor_url()).await.ok()
        })
        .await;
        for (name, value) in MONITOR_SETTINGS {
            let set = format!("ALTER SYSTEM SET pgautofailover.{name} = {value}");
            sqlx::raw_sql(sqlx::AssertSqlSafe(set))
                .execute(&mut monitor)
                .await
                .expect("a monitor setting");
        }
        sqlx::query("SELECT pg_reload_conf()")
            .execute(&mut monitor)
            .await
            .expect("reload the monitor's settings");
        monitor.close().await.expect("close");
        println!("formation: monitor up after {:.1?}", started.elapsed());
        for node in 0..NODES {
            formation.create_node(node);
            eventually(&format!("node {node} to join"), SETTLE, || async {
                if node > 0 {
                    // A standby is copied by pg_basebackup, which waits for a checkpoint that
                    // Postgres spreads over minutes; asked for one at once, it hurries.
                    formation.checkpoint(0).await;
                }
                let joined = formation.states().await?.iter().any(|s| {
                    s.port == formation.ports[node]
                        && s.reported == s.goal
                        && matches!(s.reported.as_str(), "single" | "primary" | "secondary")
                });
                joined.then_some(())
            })
            .await;
            println!(
                "formation: node {node} joined after {:.1?}",
                started.elapsed()
            );
        }
        formation
            .await_state("one primary and two secondaries", |states| {
                healthy(states).is_some()
            })
            .await;
        formation
    }

    /// The URL the formation hands out (`pg_autoctl show uri`), every node in order with
    /// `target_session_attrs=read-write`, for the database `order_service`.
    pub fn url(&self) -> String {
        let output = Command::new("runuser")
            .args(["-u", "postgres", "--", "env"])
            .args(self.env())
            .args(["pg_autoctl", "show", "uri", "--formation", "default"])
            .args(["--pgdata", path(&self.dir.join("monitor"))])
            .output()
            .expect("pg_autoctl show uri");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout)
            .expect("a UTF-8 URI")
            .trim()
            .to_owned()
    }

    /// The nodes as the monitor reports them.
    pub async fn states(&self) -> Option<Vec<NodeState>> {
        let mut conn = PgConnection::connect(&self.monitor_url()).await.ok()?;
        let rows: Vec<(i32, String, String)> = sqlx::query_as(
            "SELECT nodeport, reportedstate::text, goalstate::text FROM pgautofailover.node \
             ORDER BY nodeid",
        )
        .fetch_all(&mut conn)
        .await
        .ok()?;
        let _ = conn.close().await;
        Some(
            rows.into_iter()
                .map(|(port, reported, goal)| NodeState {
                    port: u16::try_from(port).expect("a port"),
                    reported,
                    goal,
                })
                .collect(),
        )
    }

    /// Waits until the monitor's view satisfies `done`.
    pub async fn await_state(&self, what: &str, done: impl Fn(&[NodeState]) -> bool) {
        eventually(what, SETTLE, || async {
            let states = self.states().await?;
            done(&states).then_some(())
        })
        .await;
    }

    /// The node (an index into [`Formation::ports`]) the monitor reports as the primary.
    pub async fn primary(&self) -> usize {
        eventually("a primary", SETTLE, || self.primary_now()).await
    }

    /// The node the monitor reports as the primary now, if any.
    async fn primary_now(&self) -> Option<usize> {
        let states = self.states().await?;
        let primary = states
            .iter()
            .find(|s| s.reported == "primary" && s.goal == "primary")?;
        self.ports.iter().position(|port| *port == primary.port)
    }

    /// Waits until the formation is whole again: one primary, the other nodes secondaries, all
    /// where the monitor wants them; returns the primary. A node that rejoins by copying the
    /// primary (`pg_basebackup`, when `pg_rewind` cannot serve) waits for a checkpoint, which
    /// Postgres spreads over minutes: the primary is asked for one every few seconds meanwhile.
    /// Gives up, with the monitor's view and the tail of every log, after a generous bound.
    pub async fn await_healthy(&self) -> usize {
        let started = std::time::Instant::now();
        let mut last_checkpoint = started;
        loop {
            let states = self.states().await;
            if let Some(port) = states.as_deref().and_then(healthy)
                && let Some(node) = self.ports.iter().position(|p| *p == port)
            {
                return node;
            }
            if last_checkpoint.elapsed() > CHECKPOINT_EVERY {
                if let Some(primary) = self.primary_now().await {
                    // Bounded: a frozen or dying primary does not answer.
                    let _ = tokio::time::timeout(CHECKPOINT_EVERY, self.checkpoint(primary)).await;
                }
                last_checkpoint = std::time::Instant::now();
            }
            assert!(
                started.elapsed() < SETTLE,
                "gave up waiting for the formation to be healthy after {SETTLE:?}; the monitor \
                 reports {states:?}\n{}",
                self.log_tails()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The last lines of the monitor's and every node's log, for a failure report.
    pub fn log_tails(&self) -> String {
        std::iter::once("monitor".to_owned())
            .chain((0..NODES).map(|node| format!("node{node}")))
            .map(|name| {
                let tail = log_tail(&self.dir.join(format!("{name}.log")), 25);
                format!("--- {name} ---\n{tail}")
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Waits until the monitor reports a primary other than `old` (the formation may still be
    /// missing a node); returns it.
    pub async fn await_primary_other_than(&self, old: usize) -> usize {
        eventually("a new primary", SETTLE, || async {
            let primary = self.primary_now().await?;
            (primary != old).then_some(primary)
        })
        .await
    }

    /// SIGKILL to the node's keeper and its Postgres at once, as a machine that dies.
    /// Returns once every process of the node is gone: a keeper killed with its parent
    /// (`runuser`) is reaped by init, and until then its pid file names a process that still
    /// exists, so a keeper run again on the node would refuse to start.
    pub fn kill(&mut self, node: usize) {
        let pids = self.signal(node, "KILL");
        if let Some(mut child) = self.nodes[node].take() {
            let _ = child.wait();
        }
        let started = std::time::Instant::now();
        while pids
            .iter()
            .any(|pid| Path::new(&format!("/proc/{pid}")).exists())
            && started.elapsed() < SETTLE
        {
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGSTOP to the node's keeper and its Postgres: their sockets stay open, silent.
    pub fn freeze(&self, node: usize) {
        self.signal(node, "STOP");
    }

    pub fn thaw(&self, node: usize) {
        self.signal(node, "CONT");
    }

    /// `kill -<name>` to every process of the node: its keeper's process group, and its
    /// Postgres with every backend (Postgres may run in a session of its own when the keeper
    /// started it through `pg_ctl`, which calls `setsid`).
    fn signal(&self, node: usize, name: &str) -> Vec<u32> {
        match &self.nodes[node] {
            Some(child) => signal_tree(child, &self.dir.join(format!("node{node}")), name),
            None => vec![],
        }
    }

    /// Runs a killed node again (`pg_autoctl run` on its data): it rejoins as a standby.
    pub fn restart(&mut self, node: usize) {
        assert!(self.nodes[node].is_none(), "node {node} is running");
        let data = self.dir.join(format!("node{node}"));
        self.nodes[node] =
            Some(self.pg_autoctl(&format!("node{node}"), &["run", "--pgdata", path(&data)]));
    }

    /// A planned switchover, asked of the monitor: the primary hands over to a standby.
    pub async fn switchover(&self) {
        let mut monitor = PgConnection::connect(&self.monitor_url())
            .await
            .expect("the monitor");
        sqlx::query("SELECT pgautofailover.perform_failover('default', 0)")
            .execute(&mut monitor)
            .await
            .expect("perform_failover");
        let _ = monitor.close().await;
    }

    async fn checkpoint(&self, node: usize) {
        let url = format!(
            "postgres://postgres@127.0.0.1:{}/postgres?sslmode=disable",
            self.ports[node]
        );
        if let Ok(mut conn) = PgConnection::connect(&url).await {
            let _ = sqlx::query("CHECKPOINT").execute(&mut conn).await;
            let _ = conn.close().await;
        }
    }

    fn create_node(&mut self, node: usize) {
        let data = self.dir.join(format!("node{node}"));
        let port = self.ports[node].to_string();
        let monitor = format!(
            "postgres://autoctl_node@127.0.0.1:{}/pg_auto_failover?sslmode=disable",
            self.monitor_port
        );
        let name = format!("node{node}");
        self.nodes[node] = Some(self.pg_autoctl(
            &name,
            &[
                "create",
                "postgres",
                "--pgdata",
                path(&data),
                "--pgport",
                &port,
                "--hostname",
                "127.0.0.1",
                "--name",
                &name,
                "--dbname",
                "order_service",
                "--auth",
                "trust",
                "--no-ssl",
                "--pgctl",
                &format!("{PG_BIN}/pg_ctl"),
                "--monitor",
                &monitor,
                "--run",
            ],
        ));
    }

    /// `pg_autoctl args…` as `postgres`, in a process group of its own, logging to `<log>.log`.
    fn pg_autoctl(&self, log: &str, args: &[&str]) -> Child {
        let log = File::options()
            .create(true)
            .append(true)
            .open(self.dir.join(format!("{log}.log")))
            .expect("a log file");
        Command::new("runuser")
            .args(["-u", "postgres", "--", "env"])
            .args(self.env())
            .arg("pg_autoctl")
            .args(args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .process_group(0)
            .spawn()
            .expect("start pg_autoctl")
    }

    /// pg_autoctl keeps its configuration and state under the XDG directories: the formation's.
    fn env(&self) -> Vec<String> {
        let dir = |name: &str| path(&self.dir.join(name)).to_owned();
        vec![
            format!("XDG_CONFIG_HOME={}", dir("config")),
            format!("XDG_DATA_HOME={}", dir("data")),
            format!("XDG_RUNTIME_DIR={}", dir("run")),
            format!("PATH={PG_BIN}:/usr/bin:/bin"),
        ]
    }

    fn monitor_url(&self) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{}/pg_auto_failover?sslmode=disable",
            self.monitor_port
        )
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// The primary's port if the formation is whole: every node where the monitor wants it, one
/// primary and the others secondaries.
fn healthy(states: &[NodeState]) -> Option<u16> {
    let settled = states.len() == NODES && states.iter().all(|s| s.reported == s.goal);
    let primaries: Vec<&NodeState> = states.iter().filter(|s| s.reported == "primary").collect();
    let secondaries = states.iter().filter(|s| s.reported == "secondary").count();
    (settled && primaries.len() == 1 && secondaries == NODES - 1).then(|| primaries[0].port)
}

/// The machine's processes as `/proc` lists them: (pid, parent, process group).
struct Processes(Vec<(u32, u32, u32)>);

impl Processes {
    fn read() -> Self {
        let mut all = vec![];
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            // `pid (comm) state ppid pgrp …`; comm may hold spaces, so read after its `)`.
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            let Some((_, rest)) = stat.rsplit_once(')') else {
                continue;
            };
            let fields: Vec<&str> = rest.split_whitespace().collect();
            if let (Some(Ok(parent)), Some(Ok(group))) = (
                fields.get(1).map(|f| f.parse()),
                fields.get(2).map(|f| f.parse()),
            ) {
                all.push((pid, parent, group));
            }
        }
        Self(all)
    }

    fn in_group(&self, group: u32) -> Vec<u32> {
        self.0
            .iter()
            .filter(|(_, _, g)| *g == group)
            .map(|(pid, _, _)| *pid)
            .collect()
    }

    /// `roots` and every process below them.
    fn with_descendants(&self, roots: &[u32]) -> Vec<u32> {
        let mut found: Vec<u32> = roots.to_vec();
        let mut next = 0;
        while next < found.len() {
            let parent = found[next];
            for (pid, p, _) in &self.0 {
                if *p == parent && !found.contains(pid) {
                    found.push(*pid);
                }
            }
            next += 1;
        }
        found
    }
}

/// `kill -<name>` to the process group `child` leads and to the Postgres of `data` with all
/// its backends; returns the processes signalled.
fn signal_tree(child: &Child, data: &Path, name: &str) -> Vec<u32> {
    let processes = Processes::read();
    let mut roots = processes.in_group(child.id());
    if let Some(postmaster) = std::fs::read_to_string(data.join("postmaster.pid"))
        .ok()
        .and_then(|text| text.lines().next()?.trim().parse().ok())
    {
        roots.push(postmaster);
    }
    let pids = processes.with_descendants(&roots);
    let _ = Command::new("kill")
        .arg(format!("-{name}"))
        .arg("--")
        .args(pids.iter().map(u32::to_string))
        .stderr(Stdio::null())
        .status();
    pids
}

fn path(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

impl Drop for Formation {
    fn drop(&mut self) {
        for node in 0..NODES {
            // A frozen node dies of SIGKILL as well.
            self.kill(node);
        }
        if let Some(mut monitor) = self.monitor.take() {
            signal_tree(&monitor, &self.dir.join("monitor"), "KILL");
            let _ = monitor.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
