//! The service's binary over the harness's database and topology, as operators run it: started
//! with settings of the test's own on top, stopped with SIGTERM or SIGKILL, killed when dropped;
//! and a log file removed with the test.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};

use order_service_testkit::{AMQP_URL, eventually, service};

use super::{Harness, WAIT};

impl Harness {
    /// Starts the service's binary over this harness's database and topology, with `env` on
    /// top of its settings, writing its output to `log` (or nowhere).
    pub fn start_service(&self, env: &[(&str, &str)], log: Option<&Path>) -> ServiceProcess {
        let http_port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let output = || match log {
            Some(path) => Stdio::from(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .expect("the service's log file"),
            ),
            None => Stdio::null(),
        };
        let config = &self.config;
        let child = service::command(
            env!("CARGO_BIN_EXE_order-service"),
            &self.db.url,
            AMQP_URL,
            http_port,
            config,
        )
        .env("RUST_LOG", "error")
        .env("DB_MAX_CONNECTIONS", "4")
        .env("OUTBOX_POLL_MS", "200")
        .env("AMQP_DELIVERY_LIMIT", config.delivery_limit.to_string())
        .envs(env.iter().copied())
        .stdout(output())
        .stderr(output())
        .spawn()
        .expect("start order-service");
        ServiceProcess {
            child: Some(child),
            http_port,
        }
    }
}

/// The service's binary, started by [`Harness::start_service`]; `kill -9` on drop.
pub struct ServiceProcess {
    child: Option<Child>,
    pub http_port: u16,
}

impl ServiceProcess {
    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("a running service").id()
    }

    /// SIGKILL: no shutdown, no acknowledgement.
    pub fn kill(mut self) {
        self.kill_now();
    }

    /// SIGTERM, as an orchestrator stops it; returns once the process has exited.
    pub async fn terminate(mut self) -> ExitStatus {
        let mut child = self.child.take().expect("a running service");
        let sent = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(sent.success(), "SIGTERM sent");
        tokio::task::spawn_blocking(move || child.wait())
            .await
            .expect("the wait")
            .expect("the exit status")
    }

    /// Waits until the service answers `/health/ready` with 200.
    pub async fn wait_ready(&self) {
        eventually("the service to be ready", WAIT, || async {
            matches!(
                order_service_testkit::http::get(self.http_port, "/health/ready").await,
                Ok((200, _))
            )
            .then_some(())
        })
        .await;
    }

    fn kill_now(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for ServiceProcess {
    fn drop(&mut self) {
        self.kill_now();
    }
}

/// A file in the temporary directory (a service's log), removed with this value, pass or fail.
pub struct TempFile(pub PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
