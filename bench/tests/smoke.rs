//! The benchmark harness at a tiny size, so it cannot rot: it must run against the real Postgres
//! and RabbitMQ, spawn the real service, run every phase once (the raw designs, both doors, the
//! duplicates, both curves), write its report and find that duplicates write nothing and that
//! each design writes the rows it should. Figures must be positive; no timing is asserted.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::Value;

/// The service binary, built now by the cargo running this test. The service is another package
/// of the workspace, so cargo gives this test no `CARGO_BIN_EXE_order-service`; asking cargo
/// (a no-op when it is fresh) keeps `cargo test -p order-service-bench` from running a stale or
/// missing binary, and cargo's JSON messages say where the executable is. `--workspace` resolves
/// dependency features as the bench's own build did, so the build reuses its artifacts.
fn service_binary() -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args(["build", "--workspace", "--bin", "order-service"])
        .arg("--manifest-path")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.toml"))
        .arg("--message-format=json-render-diagnostics")
        .stderr(Stdio::inherit())
        .output()
        .expect("run cargo build");
    assert!(output.status.success(), "cargo could not build the service");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|message| message["target"]["name"] == "order-service")
        .find_map(|message| message["executable"].as_str().map(PathBuf::from))
        .expect("cargo reported the service's executable")
}

#[test]
fn the_benchmark_runs_end_to_end_and_duplicates_write_no_rows() {
    let out = std::env::temp_dir().join(format!(
        "order-service-bench-smoke-{}",
        uuid::Uuid::new_v4()
    ));
    let output = Command::new(env!("CARGO_BIN_EXE_order-service-bench"))
        .args(["--quick", "--repetitions", "1", "--service-bin"])
        .arg(service_binary())
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
        "reference",
        "ceiling",
        "app_layer",
        "batched",
        "consumer",
        "rest",
        "ratios",
        "duplicates",
        "resources",
        "scaling",
        "batch_curve",
    ] {
        assert!(report.get(key).is_some(), "the report has no {key}");
    }
    for pointer in [
        "/reference/median",
        "/ceiling/median",
        "/app_layer/median",
        "/batched/natural/median",
        "/batched/dedup_table/median",
        "/consumer/series/median",
        "/consumer/applied/median",
        "/rest/series/median",
        "/ratios/consumer_over_reference",
        "/ratios/rest_over_reference",
        "/ratios/rest_over_app_layer",
        "/ratios/consumer_over_ceiling",
        "/ratios/rest_over_ceiling",
        "/ratios/natural_over_dedup_table",
        "/resources/consumer_cpu_s_per_1000_messages",
        "/resources/cpu_per_operation/natural_batched/total_ms",
        "/resources/cpu_per_operation/app_layer/total_ms",
        "/resources/cpu_per_operation/dedup_table_batched/total_ms",
        "/resources/peak_rss_mib",
        "/rest/open_loop_latency/p99_ms",
    ] {
        let value = report.pointer(pointer).and_then(Value::as_f64);
        assert!(value.is_some_and(|v| v > 0.0), "{pointer} is {value:?}");
    }
    let curves = [
        (
            "scaling",
            "levels",
            [
                "reference_tx_per_s",
                "consumer_msgs_per_s",
                "rest_req_per_s",
            ],
        ),
        (
            "batch_curve",
            "sizes",
            [
                "consumer_msgs_per_s",
                "natural_msgs_per_s",
                "consumer_service_cpu_s_per_1000",
            ],
        ),
    ];
    for (curve, levels, lines) in curves {
        let points = report[curve][levels].as_array().map_or(0, Vec::len);
        assert!(points >= 2, "{curve} has {points} points");
        for line in lines {
            let values = report[curve][line].as_array().cloned().unwrap_or_default();
            assert_eq!(values.len(), points, "{curve}.{line}");
            assert!(
                values.iter().all(|v| v.as_f64().is_some_and(|v| v > 0.0)),
                "{curve}.{line}: {values:?}"
            );
        }
    }
    // Every design writes what the service writes: ledger, order, history, outbox; the
    // dedup-table design one row more.
    for (design, rows) in [
        ("reference", 4.0),
        ("ceiling", 4.0),
        ("app_layer", 4.0),
        ("natural_batched", 4.0),
        ("dedup_table_batched", 5.0),
    ] {
        assert_eq!(report["rows_per_payment"][design], rows, "{design}");
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
    assert!(out.join("latest-batch.svg").is_file());
    std::fs::remove_dir_all(&out).expect("remove the smoke test's reports");
}
