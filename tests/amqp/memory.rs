//! The memory ceiling (docs/hostile-input.md#memory): the service's binary, at its default
//! settings, through a burst of 64 messages of 10 MiB each (as large as a publisher may make
//! them under the broker's `max_message_size` the service expects; each is refused as too large
//! and parked), keeps its peak resident memory under 256 MiB, and gives memory back once idle.

use std::time::Duration;

use lapin::BasicProperties;

use order_service_testkit::eventually;

use crate::helpers::Harness;

const MIB: u64 = 1024 * 1024;
const BURST: usize = 64;
const MESSAGE_BYTES: usize = 10 * 1024 * 1024;

/// A field of `/proc/<pid>/status` in bytes (`VmRSS`: resident now; `VmHWM`: the peak).
fn status_bytes(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the status");
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .expect("the field");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("a number of kB");
    kib * 1024
}

/// Bytes that do not compress (each message its own), so neither the broker nor Postgres can
/// make them small.
fn incompressible(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect()
}

#[tokio::test]
async fn a_burst_of_large_messages_stays_under_the_ceiling_and_memory_returns_when_idle() {
    let h = Harness::start().await;
    // Queued before the service starts, so the broker sends as many as the service lets it.
    for n in 0..BURST {
        let body = incompressible(n as u64, MESSAGE_BYTES);
        h.publish_raw("payment.succeeded", &body, BasicProperties::default())
            .await;
    }
    let service = h.start_service(&[], None);
    let pid = service.pid();
    service.wait_ready().await;
    let before = status_bytes(pid, "VmRSS");

    eventually(
        "the burst to be parked",
        Duration::from_secs(300),
        || async {
            // Each refused unread by the consumer, and parked whole with the reason.
            let parked: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM dead_letters WHERE reason_class = 'poison' \
             AND reason LIKE '%refused unread' AND octet_length(body) = 10485760",
            )
            .fetch_one(&h.db.pool)
            .await
            .expect("count the dead letters");
            (parked == BURST as i64).then_some(())
        },
    )
    .await;
    let peak = status_bytes(pid, "VmHWM");
    eprintln!(
        "resident before {} MiB, peak {} MiB",
        before / MIB,
        peak / MIB
    );
    assert!(peak < 256 * MIB, "peak resident memory {} MiB", peak / MIB);
    let idle = eventually("memory to be returned", Duration::from_secs(60), || async {
        let now = status_bytes(pid, "VmRSS");
        (now < 100 * MIB).then_some(now)
    })
    .await;
    eprintln!("resident once idle {} MiB", idle / MIB);
}
