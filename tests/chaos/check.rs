//! Quiescence and the comparison with the model: the final rows and the captured outbound events
//! against what each step applied once, in causal order, would give — plus invariants 1–4.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use sqlx::PgPool;
use uuid::Uuid;

use crate::cluster::Captured;
use crate::model::{Expected, Script};

type Row = (
    String,
    i64,
    i64,
    bool,
    Option<String>,
    Option<String>,
    Option<String>,
);

const LEGAL: [(Option<&str>, &str); 4] = [
    (None, "PENDING_PAYMENT"),
    (Some("PENDING_PAYMENT"), "PAID"),
    (Some("PENDING_PAYMENT"), "CANCELLED"),
    (Some("PAID"), "SHIPPED"),
];

/// Waits until every order reached its expected version, the outbox is drained and each of its
/// events was captured, or `limit` passes (the comparison then shows what is missing).
pub async fn quiesce(
    pool: &PgPool,
    scripts: &[Script],
    expected: &[Expected],
    captured: impl Fn() -> Vec<Captured>,
    limit: Duration,
) {
    let start = Instant::now();
    while start.elapsed() < limit {
        if settled(pool, scripts, expected, &captured())
            .await
            .unwrap_or(false)
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn settled(
    pool: &PgPool,
    scripts: &[Script],
    expected: &[Expected],
    captured: &[Captured],
) -> Result<bool, sqlx::Error> {
    let ids: Vec<Uuid> = scripts.iter().map(|s| s.order_id).collect();
    let versions: Vec<(Uuid, i64)> =
        sqlx::query_as("SELECT id, version FROM orders WHERE id = ANY($1)")
            .bind(&ids)
            .fetch_all(pool)
            .await?;
    let versions: HashMap<Uuid, i64> = versions.into_iter().collect();
    if scripts
        .iter()
        .zip(expected)
        .any(|(s, e)| versions.get(&s.order_id) != Some(&e.version))
    {
        return Ok(false);
    }
    let events: Vec<(Uuid, Option<bool>)> = sqlx::query_as(
        "SELECT event_id, published_at IS NOT NULL FROM outbox WHERE order_id = ANY($1)",
    )
    .bind(&ids)
    .fetch_all(pool)
    .await?;
    let seen: std::collections::HashSet<&str> =
        captured.iter().map(|c| c.message_id.as_str()).collect();
    Ok(events
        .iter()
        .all(|(id, published)| *published == Some(true) && seen.contains(id.to_string().as_str())))
}

/// Every difference between the database, the captured events and the model.
pub async fn compare(
    pool: &PgPool,
    scripts: &[Script],
    expected: &[Expected],
    captured: &[Captured],
) -> Result<Vec<String>, sqlx::Error> {
    let mut diffs = vec![];
    for (index, (script, want)) in scripts.iter().zip(expected).enumerate() {
        let mut diff = |what: String| {
            diffs.push(format!(
                "order {index} ({}, {}): {what}",
                script.kind, script.order_id
            ))
        };
        let row: Option<Row> = sqlx::query_as(
            "SELECT status, version, paid_minor, refund_required, carrier, tracking_number, cancellation_reason \
             FROM orders WHERE id = $1",
        )
        .bind(script.order_id)
        .fetch_optional(pool)
        .await?;
        let Some((status, version, paid, refund, carrier, tracking, reason)) = row else {
            diff("missing".into());
            continue;
        };
        let shipment = carrier.zip(tracking);
        for (field, got, wanted) in [
            ("status", status.clone(), want.status.clone()),
            ("version", version.to_string(), want.version.to_string()),
            ("paid_minor", paid.to_string(), want.paid_minor.to_string()),
            (
                "refund_required",
                refund.to_string(),
                want.refund_required.to_string(),
            ),
            (
                "shipment",
                format!("{shipment:?}"),
                format!("{:?}", want.shipment),
            ),
            (
                "cancellation_reason",
                format!("{reason:?}"),
                format!("{:?}", want.cancellation_reason),
            ),
        ] {
            if got != wanted {
                diff(format!("{field}: expected {wanted}, got {got}"));
            }
        }

        // Invariant 2: one row per transfer; paid_minor is their sum.
        let ledger: Vec<(String, i64)> =
            sqlx::query_as("SELECT transfer_id, amount_minor FROM transfers WHERE order_id = $1")
                .bind(script.order_id)
                .fetch_all(pool)
                .await?;
        let sum: i64 = ledger.iter().map(|l| l.1).sum();
        let ledger: BTreeMap<String, i64> = ledger.into_iter().collect();
        if ledger != want.ledger {
            diff(format!(
                "ledger: expected {:?}, got {ledger:?}",
                want.ledger
            ));
        }
        if sum != paid {
            diff(format!("paid_minor {paid} is not the ledger's sum {sum}"));
        }
        // Invariant 3.
        if (status == "PAID" || status == "SHIPPED") && paid < script.amount {
            diff(format!("{status} with only {paid} paid"));
        }

        // Invariant 1: one history row per version, legal changes, each status entered once.
        let history: Vec<(i64, String, Option<String>, String)> = sqlx::query_as(
            "SELECT version, kind, from_status, to_status FROM order_transitions WHERE order_id = $1 ORDER BY version",
        )
        .bind(script.order_id)
        .fetch_all(pool)
        .await?;
        let versions: Vec<i64> = history.iter().map(|h| h.0).collect();
        if versions != (1..=version).collect::<Vec<_>>() {
            diff(format!(
                "history versions {versions:?} for version {version}"
            ));
        }
        let mut entered = vec![];
        for (_, _, from, to) in history
            .iter()
            .filter(|h| h.2.as_deref() != Some(h.3.as_str()))
        {
            if !LEGAL.contains(&(from.as_deref(), to.as_str())) {
                diff(format!("illegal transition {from:?} -> {to}"));
            }
            if entered.contains(to) {
                diff(format!("entered {to} twice"));
            }
            entered.push(to.clone());
        }
        let mut kinds: Vec<String> = history.iter().map(|h| h.1.clone()).collect();
        kinds.sort();
        if kinds != want.kinds {
            diff(format!(
                "history kinds: expected {:?}, got {kinds:?}",
                want.kinds
            ));
        }

        // Invariant 4: one outbox row per change that emits, each published.
        let outbox: Vec<(Uuid, String, Option<bool>)> = sqlx::query_as(
            "SELECT event_id, event_type, published_at IS NOT NULL FROM outbox WHERE order_id = $1 ORDER BY id",
        )
        .bind(script.order_id)
        .fetch_all(pool)
        .await?;
        let mut types: Vec<String> = outbox.iter().map(|o| o.1.clone()).collect();
        types.sort();
        if types != want.events {
            diff(format!(
                "outbox events: expected {:?}, got {types:?}",
                want.events
            ));
        }
        if outbox.iter().any(|o| o.2 != Some(true)) {
            diff("an outbox row was never published".into());
        }

        // Every event captured at least once; copies identical; first copies in version order.
        let mine: Vec<&Captured> = captured
            .iter()
            .filter(|c| c.body["data"]["id"].as_str() == Some(script.order_id.to_string().as_str()))
            .collect();
        let mut first: HashMap<&str, &Captured> = HashMap::new();
        let mut last_version = 0;
        for copy in &mine {
            match first.get(copy.message_id.as_str()) {
                Some(original) if original.body != copy.body => {
                    diff(format!(
                        "message {} published with two bodies",
                        copy.message_id
                    ));
                }
                Some(_) => {}
                None => {
                    let version = copy.body["data"]["version"].as_i64().unwrap_or(0);
                    if version < last_version {
                        diff(format!(
                            "{} (v{version}) published after v{last_version}",
                            copy.routing_key
                        ));
                    }
                    last_version = version;
                    first.insert(&copy.message_id, copy);
                }
            }
        }
        for (event_id, event_type, _) in &outbox {
            if !first.contains_key(event_id.to_string().as_str()) {
                diff(format!("{event_type} {event_id} was never received"));
            }
        }
        let mut received: Vec<String> = first.values().map(|c| c.routing_key.clone()).collect();
        received.sort();
        if received != want.events {
            diff(format!(
                "received events: expected {:?}, got {received:?}",
                want.events
            ));
        }
    }
    Ok(diffs)
}
