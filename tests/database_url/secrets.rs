//! No part of a password leaves the binary: for every bad `DATABASE_URL` below (refused as
//! written, or read but naming hosts that refuse connections), `migrate` and `serve` at
//! `RUST_LOG=debug` and `trace`, and `--help` with the URL in the environment, print no piece of
//! the URL's distinctive password, in errors or in any log line (sqlx's included).

use std::fs::File;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A `DATABASE_URL` and the pieces of its password that must never be printed. Port 1 of the
/// loopback refuses connections at once.
const URLS: &[(&str, &[&str])] = &[
    (
        "postgres://app:Qz7q?secret01@127.0.0.1:1/db",
        &["Qz7q?secret01", "secret01"],
    ),
    (
        "postgres://app:Qz7q@secret02@127.0.0.1:1/db",
        &["Qz7q", "secret02"],
    ),
    (
        "postgres://app:Qz7q/secret03@127.0.0.1:1/db",
        &["Qz7q", "secret03"],
    ),
    (
        "postgres://app:Qz7q%zzsecret04@127.0.0.1:1/db",
        &["Qz7q", "secret04"],
    ),
    (
        "postgres://app:Qz7qsecret05@127.0.0.1:0/db",
        &["Qz7qsecret05"],
    ),
    ("postgres://app:Qz7qsecret06@[::1:1/db", &["Qz7qsecret06"]),
    (
        "postgres://app:Qz7qsecret07@127.0.0.1:1/db?sslmode=bogus",
        &["Qz7qsecret07"],
    ),
    (
        "postgres://app:Qz7qsecret08@127.0.0.1:1/db?passwd=Qz7qsecret08",
        &["Qz7qsecret08"],
    ),
    (
        "postgres://app:Qz7q&secret09@127.0.0.1:1,127.0.0.1:2/db?connect_timeout=1",
        &["Qz7q&secret09"],
    ),
    (
        "postgres://127.0.0.1:1/db?password=Qz7q&secret10=x",
        &["Qz7q", "secret10"],
    ),
    (
        "host=127.0.0.1 port=1 user=app passwd=Qz7qsecret11",
        &["Qz7qsecret11"],
    ),
    (
        "host=127.0.0.1 port=1 user=app password=Qz7q secret12",
        &["Qz7q", "secret12"],
    ),
    (
        "host=127.0.0.1 port=1 user=app password='Qz7q secret13",
        &["Qz7q", "secret13"],
    ),
    (
        "host=127.0.0.1 port=1 user=app password=Qz7qsecret14 sslpassword=Qz7qsecret14",
        &["Qz7qsecret14"],
    ),
    (
        "host=127.0.0.1,127.0.0.1 port=1,2 user=app password='Qz7q secret15'",
        &["Qz7q", "secret15"],
    ),
    ("mysql://app:Qz7qsecret16@127.0.0.1:1/db", &["Qz7qsecret16"]),
];

/// How long a run may take before it is stopped: `serve` waits for Postgres for ever.
const RUN_FOR: Duration = Duration::from_secs(4);

#[test]
fn no_piece_of_a_password_is_printed_whatever_the_url_and_the_log_level() {
    for (url, secrets) in URLS {
        for level in ["debug", "trace"] {
            for command in [&["migrate"][..], &["serve"]] {
                let printed = run(command, url, level);
                // It ran, and said why it could not go on (or was still waiting for Postgres).
                assert!(!printed.is_empty(), "{command:?} {url:?} printed nothing");
                for secret in *secrets {
                    assert!(
                        !printed.contains(secret),
                        "{command:?} at {level} printed {secret:?} of {url:?}:\n{printed}"
                    );
                }
            }
        }
    }
}

#[test]
fn help_shows_neither_the_urls_password_nor_its_default() {
    let url = "postgres://app:Qz7qsecret17@127.0.0.1:1/db";
    for command in [
        &["--help"][..],
        &["help"],
        &["migrate", "--help"],
        &["serve", "--help"],
        &["dead-letters", "list", "--help"],
    ] {
        let printed = run(command, url, "trace");
        assert!(printed.contains("DATABASE_URL"), "{command:?}: {printed}");
        assert!(!printed.contains("Qz7qsecret17"), "{command:?}: {printed}");
    }
}

/// What `order-service <args>` prints, stdout and stderr together, given `DATABASE_URL=url`
/// and `RUST_LOG=level`; stopped after [`RUN_FOR`] if it is still running.
fn run(args: &[&str], url: &str, level: &str) -> String {
    let output = std::env::temp_dir().join(format!(
        "order-service-secrets-{}-{}.log",
        std::process::id(),
        unique()
    ));
    let file = File::create(&output).expect("the output file");
    let mut child = Command::new(env!("CARGO_BIN_EXE_order-service"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DATABASE_URL", url)
        .env("RUST_LOG", level)
        .env("AMQP_ENABLED", "false")
        .env("HTTP_ADDR", "127.0.0.1:0")
        .stdout(Stdio::from(file.try_clone().expect("the output file")))
        .stderr(Stdio::from(file))
        .spawn()
        .expect("start order-service");
    let started = Instant::now();
    while child.try_wait().expect("the child's status").is_none() {
        if started.elapsed() > RUN_FOR {
            child.kill().expect("stop order-service");
            child.wait().expect("order-service stopped");
            break;
        }
        // Polling the child's exit: std's `Child` has no wait with a time limit.
        std::thread::sleep(Duration::from_millis(50));
    }
    let printed = std::fs::read_to_string(&output).unwrap_or_default();
    let _ = std::fs::remove_file(&output);
    printed
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}
