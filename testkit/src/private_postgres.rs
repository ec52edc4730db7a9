//! A Postgres 15 server of a test's own, in a temporary directory on a free loopback port, run
//! as the `postgres` user when started as root (through `runuser`), so a test may make it
//! read-only, cut its connections, crash-restart or stop it without disturbing the shared server.
//! It is stopped (`pg_ctl stop -m immediate`) and its directory removed when dropped, pass or
//! fail. Settings of a caller's own go on its command line ([`PrivatePostgres::start_with`]).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use crate::free_port;

const PG_BIN: &str = "/usr/lib/postgresql/15/bin";

pub struct PrivatePostgres {
    pub port: u16,
    dir: PathBuf,
    /// The server's command line (`pg_ctl -o`): its port, socket directory and settings.
    options: String,
}

impl PrivatePostgres {
    /// initdb (trust, no fsync) and start; blocks until the server accepts connections.
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// [`PrivatePostgres::start`], with `settings` (`name`, `value`) on the server's command line
    /// besides the kit's own (a larger `max_connections`, a preloaded extension).
    pub fn start_with(settings: &[(&str, &str)]) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "order-service-pg-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        if as_root() {
            run(Command::new("chown").args(["postgres", path(&dir)]));
        }
        let port = free_port();
        let mut options = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            dir.display()
        );
        for (name, value) in settings {
            options.push_str(&format!(" -c {name}={value}"));
        }
        let pg = Self { port, dir, options };
        let data = pg.dir.join("data");
        pg.as_postgres(
            "initdb",
            &[
                "-D",
                path(&data),
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
            ],
        );
        pg.pg_ctl(&["start"]);
        pg
    }

    /// `postgres://postgres@127.0.0.1:<port>/<database>`
    pub fn url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }

    /// The server's temporary directory (its data, its log), removed with it: a place for the
    /// logs of what a test runs against it.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A crash restart: every connection and in-flight transaction is cut, then the server
    /// starts again on the same port; blocks until it accepts connections.
    pub fn restart(&self) {
        self.pg_ctl(&["-m", "immediate", "restart"]);
    }

    /// Stops the server at once, as a crash would: every connection is cut, and its port
    /// refuses new ones.
    pub fn kill(&self) {
        let data = self.dir.join("data");
        let _ = self
            .postgres_command("pg_ctl")
            .args(["-D", path(&data), "-m", "immediate", "-w", "stop"])
            .stdin(Stdio::null())
            .output();
    }

    /// `pg_ctl` on this server's data directory, with its log and command line, then `action`.
    fn pg_ctl(&self, action: &[&str]) {
        let data = self.dir.join("data");
        let log = self.dir.join("postgres.log");
        let mut args = vec![
            "-D",
            path(&data),
            "-l",
            path(&log),
            "-w",
            "-o",
            &self.options,
        ];
        args.extend_from_slice(action);
        self.as_postgres("pg_ctl", &args);
    }

    /// Runs a Postgres `tool` with `args` as the server's owner; panics if it fails.
    fn as_postgres(&self, tool: &str, args: &[&str]) {
        run(self.postgres_command(tool).args(args));
    }

    /// A Postgres `tool` run as `postgres` if we are root (Postgres refuses to run as root),
    /// else as ourselves; in the server's directory, which its owner can read.
    fn postgres_command(&self, tool: &str) -> Command {
        let tool = format!("{PG_BIN}/{tool}");
        let mut command = if as_root() {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--", &tool]);
            command
        } else {
            Command::new(tool)
        };
        command.current_dir(&self.dir);
        command
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn path(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

/// Whether this process runs as root (`id -u` is 0), asked once.
fn as_root() -> bool {
    static ROOT: OnceLock<bool> = OnceLock::new();
    *ROOT.get_or_init(|| {
        Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|output| output.stdout == b"0\n")
    })
}

fn run(command: &mut Command) {
    let output = command
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{command:?}: {e}"));
    assert!(
        output.status.success(),
        "{command:?} failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
