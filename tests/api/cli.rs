//! The command line, as an operator runs it.

use std::process::Command;

#[test]
fn help_shows_no_password_of_the_configured_or_default_urls() {
    let output = Command::new(env!("CARGO_BIN_EXE_order-service"))
        .arg("--help")
        .env(
            "DATABASE_URL",
            "postgres://app:db-secret-1@db.internal:5432/orders",
        )
        .env(
            "AMQP_URL",
            "amqp://app:broker-secret-2@mq.internal:5672/%2f",
        )
        .output()
        .expect("run order-service --help");

    let help = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{help}");
    assert!(
        help.contains("--database-url") && help.contains("--amqp-url"),
        "{help}"
    );
    for secret in ["db-secret-1", "broker-secret-2", "guest:guest"] {
        assert!(!help.contains(secret), "{secret} in:\n{help}");
    }
    // The defaults stay documented, without their password.
    assert!(
        help.contains("amqp://guest:***@127.0.0.1:5672/%2f"),
        "{help}"
    );
}
