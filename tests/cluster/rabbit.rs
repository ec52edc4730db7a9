//! A private RabbitMQ cluster: three nodes of this test's own, each with its node name, AMQP and
//! distribution ports, data, log and configuration files under the test's directory, and an
//! Erlang cookie of its own (`$HOME/.erlang.cookie`, with `HOME` in that directory). Nothing of
//! the machine's broker is read or touched: not its cookie, configuration, environment file or
//! data. Only epmd (port 4369) is shared, as it is by design.
//!
//! The scripts are run from `/usr/lib/rabbitmq/bin`, not `/usr/sbin`: the latter wrappers switch
//! to the `rabbitmq` user, whose home holds the machine broker's cookie. Dropping the cluster
//! kills every node by its pid and removes the directory, pass or fail.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};

use crate::common::eventually;

const SCRIPTS: &str = "/usr/lib/rabbitmq/bin";
/// Where [`free_port`] draws the nodes' and instances' ports.
const LISTEN_PORTS: std::ops::Range<u16> = 20_000..32_000;
/// Bound on a node starting, or rejoining after a restart.
pub const NODE_START: Duration = Duration::from_secs(90);
/// Bound on one CLI command (the scripts' own timeouts do not cover every command).
const SCRIPT_LIMIT: Duration = Duration::from_secs(90);

pub struct RabbitCluster {
    dir: PathBuf,
    pub nodes: Vec<Node>,
}

pub struct Node {
    pub name: String,
    pub amqp_port: u16,
    dist_port: u16,
    dir: PathBuf,
    server: Option<Child>,
}

impl RabbitCluster {
    /// Starts `count` nodes and clusters the others with the first.
    pub async fn start(count: usize) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "order-service-cluster-{}-{:08x}",
            std::process::id(),
            getrandom::u32().expect("randomness")
        ));
        let home = dir.join("home");
        std::fs::create_dir_all(&home).expect("the cluster's directory");
        write_cookie(&home.join(".erlang.cookie"));
        let mut cluster = Self { dir, nodes: vec![] };
        for letter in ["a", "b", "c"].into_iter().take(count) {
            let node_dir = cluster.dir.join(letter);
            std::fs::create_dir_all(&node_dir).expect("a node's directory");
            let amqp_port = free_port();
            let node = Node {
                name: format!("os-cluster-{}-{letter}@localhost", std::process::id()),
                amqp_port,
                dist_port: free_port(),
                dir: node_dir,
                server: None,
            };
            node.write_configuration();
            cluster.nodes.push(node);
        }
        for slot in 0..cluster.nodes.len() {
            cluster.launch(slot);
        }
        for slot in 0..cluster.nodes.len() {
            cluster.await_running(slot).await;
        }
        let first = cluster.nodes[0].name.clone();
        for slot in 1..cluster.nodes.len() {
            cluster.ctl(slot, &["stop_app"]).await;
            cluster.ctl(slot, &["join_cluster", &first]).await;
            cluster.ctl(slot, &["start_app"]).await;
        }
        for slot in 0..cluster.nodes.len() {
            cluster.await_rejoined(slot).await;
        }
        cluster
    }

    /// `AMQP_URL` listing every node.
    pub fn amqp_list(&self) -> String {
        self.nodes
            .iter()
            .map(|n| n.amqp_url())
            .collect::<Vec<_>>()
            .join(",")
    }

    fn home(&self) -> PathBuf {
        self.dir.join("home")
    }

    /// Starts (or restarts) the node of `slot`, in the foreground of a process of ours.
    fn launch(&mut self, slot: usize) {
        let home = self.home();
        let node = &mut self.nodes[slot];
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(node.dir.join("server.out"))
            .expect("the node's output file");
        let mut command = Command::new(format!("{SCRIPTS}/rabbitmq-server"));
        private_env(&mut command, &home, &node.dir);
        let dir = &node.dir;
        command
            .env("RABBITMQ_NODENAME", &node.name)
            .env("RABBITMQ_NODE_IP_ADDRESS", "127.0.0.1")
            .env("RABBITMQ_NODE_PORT", node.amqp_port.to_string())
            .env("RABBITMQ_DIST_PORT", node.dist_port.to_string())
            .env("RABBITMQ_MNESIA_BASE", dir.join("mnesia"))
            .env("RABBITMQ_LOG_BASE", dir.join("log"))
            .env("RABBITMQ_CONFIG_FILE", dir.join("rabbitmq.conf"))
            .env("RABBITMQ_ADVANCED_CONFIG_FILE", dir.join("advanced.config"))
            .env("RABBITMQ_ENABLED_PLUGINS_FILE", dir.join("enabled_plugins"))
            .env("RABBITMQ_PID_FILE", dir.join("pid"))
            .env(
                "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS",
                "-kernel inet_dist_use_interface {127,0,0,1}",
            )
            .stdin(Stdio::null())
            .stdout(Stdio::from(out.try_clone().expect("output")))
            .stderr(Stdio::from(out))
            .kill_on_drop(true);
        let _ = std::fs::remove_file(dir.join("pid"));
        node.server = Some(command.spawn().expect("start rabbitmq-server"));
    }

    /// `kill -9` of the node's Erlang VM: no goodbye to its peers or its clients.
    pub async fn kill(&mut self, slot: usize) {
        let node = &mut self.nodes[slot];
        node.kill_vm();
        if let Some(mut server) = node.server.take() {
            let _ = server.wait().await;
        }
    }

    /// Restarts a killed node and waits until it is running and clustered again.
    pub async fn restart(&mut self, slot: usize) {
        self.launch(slot);
        self.await_running(slot).await;
        self.await_rejoined(slot).await;
    }

    async fn await_running(&self, slot: usize) {
        let name = self.nodes[slot].name.clone();
        eventually(&format!("{name} to start"), NODE_START, || async {
            self.try_ctl(slot, &["await_startup", "--timeout", "5"])
                .await
                .ok()
        })
        .await;
    }

    /// Waits until every other node lists `slot`'s node as running.
    async fn await_rejoined(&self, slot: usize) {
        let name = self.nodes[slot].name.clone();
        for other in (0..self.nodes.len()).filter(|o| *o != slot) {
            eventually(&format!("{name} to rejoin"), NODE_START, || async {
                let status = self
                    .try_ctl(other, &["cluster_status", "--formatter", "json"])
                    .await
                    .ok()?;
                let status: serde_json::Value = serde_json::from_str(&status).ok()?;
                status["running_nodes"]
                    .as_array()?
                    .iter()
                    .any(|n| n == name.as_str())
                    .then_some(())
            })
            .await;
        }
    }

    /// Waits until stopping `slot`'s node would leave every quorum queue a majority of members.
    pub async fn await_not_quorum_critical(&self, slot: usize) {
        let name = self.nodes[slot].name.clone();
        eventually(
            &format!("{name} not to be quorum-critical"),
            NODE_START,
            || async {
                self.try_script(
                    "rabbitmq-queues",
                    slot,
                    &["check_if_node_is_quorum_critical"],
                )
                .await
                .ok()
                .map(|_| ())
            },
        )
        .await;
    }

    /// `(name, messages_ready, messages_unacknowledged)` of every queue, asked of `slot`'s node.
    pub async fn queues(&self, slot: usize) -> Vec<(String, u64, u64)> {
        let listing = self
            .ctl(
                slot,
                &[
                    "list_queues",
                    "--quiet",
                    "--no-table-headers",
                    "name",
                    "messages_ready",
                    "messages_unacknowledged",
                ],
            )
            .await;
        listing
            .lines()
            .filter_map(|line| {
                let mut fields = line.split('\t');
                let name = fields.next()?.to_owned();
                let ready = fields.next()?.trim().parse().ok()?;
                let unacked = fields.next()?.trim().parse().ok()?;
                Some((name, ready, unacked))
            })
            .collect()
    }

    /// rabbitmqctl against `slot`'s node; panics with its output if it fails.
    pub async fn ctl(&self, slot: usize, args: &[&str]) -> String {
        self.try_ctl(slot, args)
            .await
            .unwrap_or_else(|error| panic!("rabbitmqctl {args:?}: {error}"))
    }

    async fn try_ctl(&self, slot: usize, args: &[&str]) -> Result<String, String> {
        self.try_script("rabbitmqctl", slot, args).await
    }

    /// One of the CLI scripts (`rabbitmqctl`, `rabbitmq-queues`) with `-n` the node of `slot`,
    /// and this cluster's `HOME`, hence its cookie.
    async fn try_script(&self, script: &str, slot: usize, args: &[&str]) -> Result<String, String> {
        let mut command = Command::new(format!("{SCRIPTS}/{script}"));
        private_env(&mut command, &self.home(), &self.nodes[slot].dir);
        let output = command
            .arg("-n")
            .arg(&self.nodes[slot].name)
            .args(args)
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output();
        let output = tokio::time::timeout(SCRIPT_LIMIT, output)
            .await
            .map_err(|_| format!("{script} {args:?}: no answer within {SCRIPT_LIMIT:?}"))?
            .map_err(|e| e.to_string())?;
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        if output.status.success() {
            Ok(stdout)
        } else {
            Err(format!(
                "{}: {stdout}{}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            ))
        }
    }

    /// The directory removed with the cluster: the test keeps its other files (the instances'
    /// logs) there too.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The tail of every log (the nodes', and the `*.log` files the test left in the directory),
    /// for a failure report.
    fn logs(&self) -> String {
        let node_logs = self
            .nodes
            .iter()
            .map(|node| node.dir.join("log").join(format!("{}.log", node.name)));
        let test_logs = std::fs::read_dir(&self.dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|e| e == "log"));
        node_logs
            .chain(test_logs)
            .map(|log| {
                let text = std::fs::read_to_string(&log).unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(15).collect();
                format!(
                    "--- {} ---\n{}",
                    log.display(),
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Node {
    pub fn amqp_url(&self) -> String {
        format!("amqp://guest:guest@127.0.0.1:{}/%2f", self.amqp_port)
    }

    fn write_configuration(&self) {
        // guest may connect over loopback (the default); no plugin, so no management listener.
        let conf = format!(
            "listeners.tcp.default = 127.0.0.1:{}\nlog.file.level = warning\n",
            self.amqp_port
        );
        std::fs::write(self.dir.join("rabbitmq.conf"), conf).expect("rabbitmq.conf");
        // The delay queues dead-letter at least once: a retry whose trip back to the inbox was
        // not confirmed (the inbox's leader died meanwhile) is sent again after this timeout,
        // 180 s by default; README "Running at scale" recommends a shorter one.
        std::fs::write(
            self.dir.join("advanced.config"),
            "[{rabbit, [{dead_letter_worker_publisher_confirm_timeout, 5000}]}].\n",
        )
        .expect("advanced.config");
        std::fs::write(self.dir.join("enabled_plugins"), "[].\n").expect("enabled_plugins");
        std::fs::write(self.dir.join("rabbitmq-env.conf"), "").expect("rabbitmq-env.conf");
    }

    /// SIGKILL to the Erlang VM named in the pid file (the script's own process then exits).
    fn kill_vm(&self) {
        if let Ok(pid) = std::fs::read_to_string(self.dir.join("pid")) {
            let pid = pid.trim();
            if !pid.is_empty() && pid.chars().all(|c| c.is_ascii_digit()) {
                let _ = std::process::Command::new("kill")
                    .args(["-9", pid])
                    .stderr(Stdio::null())
                    .status();
            }
        }
    }
}

impl Drop for RabbitCluster {
    /// Kills every node, pass or fail, and removes the directory (after showing the logs'
    /// tails if the test failed).
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("{}", self.logs());
        }
        for node in &mut self.nodes {
            node.kill_vm();
            if let Some(mut server) = node.server.take() {
                let _ = server.start_kill();
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The environment of every script: nothing inherited, this cluster's `HOME` (its cookie) and
/// an environment file of the node's own instead of the machine's.
fn private_env(command: &mut Command, home: &Path, node_dir: &Path) {
    command
        .env_clear()
        .env("PATH", "/usr/bin:/bin:/usr/sbin:/sbin")
        .env("LANG", "C.UTF-8")
        .env("HOME", home)
        .env("RABBITMQ_CONF_ENV_FILE", node_dir.join("rabbitmq-env.conf"));
}

fn write_cookie(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let cookie: String = (0..20)
        .map(|_| char::from(b'A' + (getrandom::u32().expect("randomness") % 26) as u8))
        .collect();
    std::fs::write(path, cookie).expect("the cookie");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o400)).expect("cookie mode");
}

/// A port nothing listens on, drawn below the kernel's ephemeral range (32768 and up on Linux):
/// a port from that range, released for a node to bind later, may meanwhile become the local
/// end of some outgoing connection on the machine, and the node would fail to start.
pub fn free_port() -> u16 {
    loop {
        let port = LISTEN_PORTS.start
            + (getrandom::u32().expect("randomness")
                % u32::from(LISTEN_PORTS.end - LISTEN_PORTS.start)) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() && taken(port) {
            return port;
        }
    }
}

/// Takes `port` for this test if no other caller of [`free_port`] in this process has.
fn taken(port: u16) -> bool {
    static TAKEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut taken = TAKEN.lock().expect("ports");
    if taken.contains(&port) {
        return false;
    }
    taken.push(port);
    true
}
