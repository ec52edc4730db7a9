//! A private RabbitMQ cluster: three nodes of this test's own, each with its node name, AMQP and
//! distribution ports, data, log and configuration files under the test's directory, and an
//! Erlang cookie of its own (`$HOME/.erlang.cookie`, with `HOME` in that directory). Nothing of
//! the machine's broker is read or touched: not its cookie, configuration, environment file or
//! data. Only epmd (port 4369) is shared, as it is by design.
//!
//! Each node is a `node::Node`; this file starts, clusters, kills and restarts them, and asks
//! them with the CLI scripts. Dropping the cluster kills every node by its pid and removes the
//! directory, pass or fail.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

use order_service_testkit::load::settled::QUIESCENCE;
use order_service_testkit::{eventually, log_tail};

use crate::node::{Node, SCRIPTS, private_env, write_cookie};
/// Bound on a node starting, or rejoining after a restart.
pub const NODE_START: Duration = Duration::from_secs(90);
/// Bound on one CLI command (the scripts' own timeouts do not cover every command).
const SCRIPT_LIMIT: Duration = Duration::from_secs(90);

pub struct RabbitCluster {
    dir: PathBuf,
    pub nodes: Vec<Node>,
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
        let nodes = ["a", "b", "c"]
            .into_iter()
            .take(count)
            .map(|letter| Node::new(&dir, letter))
            .collect();
        let mut cluster = Self { dir, nodes };
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

    fn launch(&mut self, slot: usize) {
        let home = self.home();
        self.nodes[slot].launch(&home);
    }

    /// `kill -9` of the node of `slot`.
    pub async fn kill(&mut self, slot: usize) {
        self.nodes[slot].kill().await;
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
        let node_logs = self.nodes.iter().map(Node::log);
        let test_logs = std::fs::read_dir(&self.dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|e| e == "log"));
        node_logs
            .chain(test_logs)
            .map(|log| format!("--- {} ---\n{}", log.display(), log_tail(&log, 15)))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for RabbitCluster {
    /// Kills every node (each node's drop), pass or fail, and removes the directory, after
    /// showing the logs' tails if the test failed.
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("{}", self.logs());
        }
        self.nodes.clear();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl RabbitCluster {
    /// Waits until no queue but those in `keep` (a subscriber's capture, the event stream) holds
    /// a ready or unacknowledged message, as `rabbitmqctl list_queues` reports them; returns that
    /// listing.
    pub async fn wait_for_empty_queues(&self, keep: &[&str]) -> Vec<(String, u64, u64)> {
        eventually("every queue to be empty", QUIESCENCE, || async {
            let queues = self.queues(0).await;
            queues
                .iter()
                .filter(|(name, _, _)| !keep.contains(&name.as_str()))
                .all(|(_, ready, unacked)| *ready == 0 && *unacked == 0)
                .then_some(queues)
        })
        .await
    }
}
