//! One node of the private cluster: its name, ports and directory (data, logs, configuration,
//! environment file, pid file), the process that runs it, and the environment every RabbitMQ
//! script gets here: nothing inherited, the cluster's own `HOME` (hence its cookie), an
//! environment file of the node's own instead of the machine's.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::process::{Child, Command};

use order_service_testkit::free_port;

/// Where RabbitMQ's own scripts are; not the `/usr/sbin` wrappers, which switch to the
/// `rabbitmq` user, whose home holds the machine broker's cookie.
pub const SCRIPTS: &str = "/usr/lib/rabbitmq/bin";

pub struct Node {
    pub name: String,
    pub amqp_port: u16,
    dist_port: u16,
    pub dir: PathBuf,
    server: Option<Child>,
}

impl Node {
    /// Node `letter` of the cluster in `cluster_dir`, its files written, not started.
    pub fn new(cluster_dir: &Path, letter: &str) -> Self {
        let dir = cluster_dir.join(letter);
        std::fs::create_dir_all(&dir).expect("a node's directory");
        let node = Self {
            name: format!("os-cluster-{}-{letter}@localhost", std::process::id()),
            amqp_port: free_port(),
            dist_port: free_port(),
            dir,
            server: None,
        };
        node.write_configuration();
        node
    }

    pub fn amqp_url(&self) -> String {
        format!("amqp://guest:guest@127.0.0.1:{}/%2f", self.amqp_port)
    }

    /// The node's log, for a failure report.
    pub fn log(&self) -> PathBuf {
        self.dir.join("log").join(format!("{}.log", self.name))
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
        // 180 s by default; docs/operations/scaling.md recommends a shorter one.
        std::fs::write(
            self.dir.join("advanced.config"),
            "[{rabbit, [{dead_letter_worker_publisher_confirm_timeout, 5000}]}].\n",
        )
        .expect("advanced.config");
        std::fs::write(self.dir.join("enabled_plugins"), "[].\n").expect("enabled_plugins");
        std::fs::write(self.dir.join("rabbitmq-env.conf"), "").expect("rabbitmq-env.conf");
    }

    /// Starts (or restarts) the node in the foreground of a process of ours, `HOME` = `home`.
    pub fn launch(&mut self, home: &Path) {
        let dir = &self.dir;
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("server.out"))
            .expect("the node's output file");
        let mut command = Command::new(format!("{SCRIPTS}/rabbitmq-server"));
        private_env(&mut command, home, dir);
        command
            .env("RABBITMQ_NODENAME", &self.name)
            .env("RABBITMQ_NODE_IP_ADDRESS", "127.0.0.1")
            .env("RABBITMQ_NODE_PORT", self.amqp_port.to_string())
            .env("RABBITMQ_DIST_PORT", self.dist_port.to_string())
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
        self.server = Some(command.spawn().expect("start rabbitmq-server"));
    }

    /// `kill -9` of the node's Erlang VM: no goodbye to its peers or its clients.
    pub async fn kill(&mut self) {
        self.kill_vm();
        if let Some(mut server) = self.server.take() {
            let _ = server.wait().await;
        }
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

impl Drop for Node {
    /// Kills the node, pass or fail.
    fn drop(&mut self) {
        self.kill_vm();
        if let Some(mut server) = self.server.take() {
            let _ = server.start_kill();
        }
    }
}

/// The environment of every script: nothing inherited, the cluster's `HOME` (its cookie) and
/// an environment file of the node's own instead of the machine's.
pub fn private_env(command: &mut Command, home: &Path, node_dir: &Path) {
    command
        .env_clear()
        .env("PATH", "/usr/bin:/bin:/usr/sbin:/sbin")
        .env("LANG", "C.UTF-8")
        .env("HOME", home)
        .env("RABBITMQ_CONF_ENV_FILE", node_dir.join("rabbitmq-env.conf"));
}

/// A fresh Erlang cookie at `path`, readable by its owner only (Erlang refuses others).
pub fn write_cookie(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let cookie: String = (0..20)
        .map(|_| char::from(b'A' + (getrandom::u32().expect("randomness") % 26) as u8))
        .collect();
    std::fs::write(path, cookie).expect("the cookie");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o400)).expect("cookie mode");
}
