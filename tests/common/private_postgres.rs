//! A Postgres 15 server of a test's own, in a temporary directory on a free loopback port, run
//! as the `postgres` user (as the chaos suite's cluster does), so a test may make it read-only,
//! cut its connections or stop it without disturbing the shared server. It is stopped
//! (`pg_ctl stop -m immediate`) and its directory removed when dropped, pass or fail.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use super::free_port;

const PG_BIN: &str = "/usr/lib/postgresql/15/bin";

pub struct PrivatePostgres {
    pub port: u16,
    dir: PathBuf,
}

impl PrivatePostgres {
    /// initdb (trust, no fsync) and start; blocks until the server accepts connections.
    pub fn start() -> Self {
        let dir = std::env::temp_dir().join(format!(
            "order-service-pg-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        run("chown", &["postgres", path(&dir)]);
        let pg = Self {
            port: free_port(),
            dir,
        };
        let data = pg.dir.join("data");
        as_postgres(
            &format!("{PG_BIN}/initdb"),
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
        let log = pg.dir.join("postgres.log");
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            pg.port,
            pg.dir.display()
        );
        as_postgres(
            &format!("{PG_BIN}/pg_ctl"),
            &[
                "-D",
                path(&data),
                "-l",
                path(&log),
                "-w",
                "-o",
                &options,
                "start",
            ],
        );
        pg
    }

    /// `postgres://postgres@127.0.0.1:<port>/<database>`
    pub fn url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }
}

impl PrivatePostgres {
    /// Stops the server at once, as a crash would: every connection is cut, and its port
    /// refuses new ones.
    pub fn kill(&self) {
        let _ = Command::new("runuser")
            .args(["-u", "postgres", "--", &format!("{PG_BIN}/pg_ctl"), "-D"])
            .arg(self.dir.join("data"))
            .args(["-m", "immediate", "-w", "stop"])
            .stdin(Stdio::null())
            .output();
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn path(path: &std::path::Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

fn as_postgres(program: &str, args: &[&str]) {
    let mut all = vec!["-u", "postgres", "--", program];
    all.extend_from_slice(args);
    run("runuser", &all);
}

fn run(program: &str, args: &[&str]) {
    let output = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(
        output.status.success(),
        "{program} {args:?} failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
