//! The benchmark harness at a tiny size, so it cannot rot: it must run against the real Postgres
//! and RabbitMQ, spawn the real service, write its report and find that duplicates write
//! nothing. No timing is asserted.

use std::process::Command;

use serde_json::Value;

#[test]
fn the_benchmark_runs_end_to_end_and_duplicates_write_no_rows() {
    let out = std::env::temp_dir().join(format!(
        "order-service-bench-smoke-{}",
        uuid::Uuid::new_v4()
    ));
    let output = Command::new(env!("CARGO_BIN_EXE_order-service-bench"))
        .args(["--quick", "--repetitions", "1", "--service-bin"])
        .arg(env!("CARGO_BIN_EXE_order-service"))
        .arg("--out")
        .arg(&out)
        .output()
        .expect("run the bench");
    assert!(
        output.status.success(),
        "the bench failed\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );

    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("latest.json")).expect("latest.json written"),
    )
    .expect("the report is JSON");
    for key in [
        "machine",
        "settings",
        "ceiling",
        "dedup_table",
        "consumer",
        "rest",
        "ratios",
        "duplicates",
        "resources",
        "scaling",
    ] {
        assert!(report.get(key).is_some(), "the report has no {key}");
    }
    for door in ["amqp", "rest"] {
        let cost = &report["duplicates"][door];
        assert!(
            cost["duplicates"].as_u64().is_some_and(|n| n > 0),
            "{door}: {cost}"
        );
        assert_eq!(
            cost["rows_written"], 0,
            "{door} duplicates wrote rows: {cost}"
        );
        assert_eq!(cost["rows_per_duplicate"], 0.0, "{door}: {cost}");
    }
    assert!(out.join("latest.md").is_file());
    assert!(out.join("latest.svg").is_file());
    std::fs::remove_dir_all(&out).expect("remove the smoke test's reports");
}
