//! Quiescence and the comparison with the model: the final rows and the captured outbound events
//! against what each step applied once, in causal order, would give — plus invariants 1–4.
//!
//! What is order-independent (`docs/contract.md#invariant-5`), checked exactly so:
//!
//! 1. The final order row (status, version, paid_minor, refunded_minor, refund_due_minor,
//!    refund_required, shipment, cancellation_reason), the ledger (one row per transfer or refund
//!    id, with its direction and content) and the history (one row per version, contiguous, legal
//!    transitions, at most one change into each status, the same kinds) are exactly those of the
//!    causal-order run; for an order whose payment races the expiry timer, those of one of the
//!    two legal causal orders (paid, or cancelled by the timer with the money to refund).
//! 2. Events: exactly one `order.created`; `order.paid`, `order.shipped` and `order.cancelled`
//!    exactly as the model says (at most one each); exactly one `order.refunded` per refund id.
//! 3. `order.refund_required` is emitted by the change that turns `refund_required` from false
//!    to true, and only then. How often that happens may depend on arrival order (a refund
//!    applied before an overpaying payment can keep the flag from ever turning on), so it is
//!    checked for consistency, not counted: walking the order's events in version order and
//!    tracking `data.refund_required` (a change that turns the flag off is a refund, which emits
//!    `order.refunded` carrying the order), each `order.refund_required` is at a version where
//!    the flag was false before and is true in its data, every false→true step is at a version
//!    with an `order.refund_required`, and the final flag is the model's.
//!
//! Every published copy of an event is identical, and each event id is published at least once.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

use order_service_testkit::http;

use crate::cluster::Captured;
use crate::events;
use crate::model::{Expected, Script};

const LEGAL: [(Option<&str>, &str); 4] = [
    (None, "PENDING_PAYMENT"),
    (Some("PENDING_PAYMENT"), "PAID"),
    (Some("PENDING_PAYMENT"), "CANCELLED"),
    (Some("PAID"), "SHIPPED"),
];

#[derive(sqlx::FromRow)]
struct Row {
    status: String,
    version: i64,
    paid_minor: i64,
    refunded_minor: i64,
    refund_required: bool,
    carrier: Option<String>,
    tracking_number: Option<String>,
    cancellation_reason: Option<String>,
}

#[derive(sqlx::FromRow)]
struct History {
    version: i64,
    kind: String,
    from_status: Option<String>,
    to_status: String,
    transfer_id: Option<String>,
    cause_source: String,
}

#[derive(sqlx::FromRow)]
pub struct Outbox {
    pub event_id: Uuid,
    pub event_type: String,
    pub published: bool,
}

/// The differences found, and which legal outcomes the orders took.
#[derive(Default)]
pub struct Comparison {
    pub diffs: Vec<String>,
    /// Orders the payment-expiry timer cancelled.
    pub expired: u64,
    /// Orders that could expire but were paid first.
    pub paid_before_timer: u64,
}

/// The legal outcome the order's final status points to (alternatives differ in status).
fn outcome<'a>(legal: &'a [Expected], status: &str) -> &'a Expected {
    legal
        .iter()
        .find(|e| e.status == status)
        .unwrap_or(&legal[0])
}

/// Waits until every order reached a legal final status and version, the outbox is drained and
/// each of its events was captured, or `limit` passes (the comparison then shows what is
/// missing).
pub async fn quiesce(
    pool: &PgPool,
    scripts: &[Script],
    expected: &[Vec<Expected>],
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
    expected: &[Vec<Expected>],
    captured: &[Captured],
) -> Result<bool, sqlx::Error> {
    let ids: Vec<Uuid> = scripts.iter().map(|s| s.order_id).collect();
    let rows: Vec<(Uuid, String, i64)> =
        sqlx::query_as("SELECT id, status, version FROM orders WHERE id = ANY($1)")
            .bind(&ids)
            .fetch_all(pool)
            .await?;
    let rows: HashMap<Uuid, (String, i64)> =
        rows.into_iter().map(|(i, s, v)| (i, (s, v))).collect();
    let done = |script: &Script, legal: &[Expected]| {
        rows.get(&script.order_id).is_some_and(|(status, version)| {
            legal
                .iter()
                .any(|e| &e.status == status && e.version == *version)
        })
    };
    if !scripts.iter().zip(expected).all(|(s, e)| done(s, e)) {
        return Ok(false);
    }
    let events: Vec<(Uuid, bool)> = sqlx::query_as(
        "SELECT event_id, NOT EXISTS (SELECT 1 FROM outbox_waiting AS w WHERE w.id = outbox.id) \
         FROM outbox WHERE order_id = ANY($1)",
    )
    .bind(&ids)
    .fetch_all(pool)
    .await?;
    let seen: HashSet<&str> = captured.iter().map(|c| c.message_id.as_str()).collect();
    Ok(events
        .iter()
        .all(|(id, published)| *published && seen.contains(id.to_string().as_str())))
}

/// The order as the API shows it (`refund_due_minor` is derived, not stored), from whichever
/// instance answers.
async fn api_view(ports: &[u16], order_id: Uuid) -> Option<Value> {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30) {
        for port in ports {
            if let Ok((200, body)) = http::get(*port, &format!("/v1/orders/{order_id}")).await {
                return serde_json::from_str(&body).ok();
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    None
}

/// Every difference between the database, the API, the captured events and the model.
pub async fn compare(
    pool: &PgPool,
    ports: &[u16],
    scripts: &[Script],
    expected: &[Vec<Expected>],
    captured: &[Captured],
) -> Result<Comparison, sqlx::Error> {
    let mut comparison = Comparison::default();
    for (index, (script, legal)) in scripts.iter().zip(expected).enumerate() {
        let id = script.order_id.to_string();
        let mine: Vec<&Captured> = captured
            .iter()
            .filter(|c| c.body["data"]["id"].as_str() == Some(id.as_str()))
            .collect();
        let (diffs, expired) = compare_order(pool, ports, script, legal, &mine).await?;
        let timed = legal.iter().any(|e| e.expired);
        comparison.expired += u64::from(timed && expired);
        comparison.paid_before_timer += u64::from(timed && !expired);
        comparison.diffs.extend(
            diffs
                .into_iter()
                .map(|d| format!("order {index} ({}, {id}): {d}", script.kind)),
        );
    }
    Ok(comparison)
}

/// One order's differences, and whether the timer cancelled it.
async fn compare_order(
    pool: &PgPool,
    ports: &[u16],
    script: &Script,
    legal: &[Expected],
    mine: &[&Captured],
) -> Result<(Vec<String>, bool), sqlx::Error> {
    let mut diffs = vec![];
    let row: Option<Row> = sqlx::query_as(
        "SELECT status, version, paid_minor, refunded_minor, refund_required, carrier, \
         tracking_number, cancellation_reason FROM orders WHERE id = $1",
    )
    .bind(script.order_id)
    .fetch_optional(pool)
    .await?;
    let Some(row) = row else {
        return Ok((vec!["missing".into()], false));
    };
    let want = outcome(legal, &row.status);

    // 1. The row, and the amount due as the API derives it.
    let due = api_view(ports, script.order_id)
        .await
        .and_then(|v| v["refund_due_minor"].as_i64());
    let shipment = row.carrier.clone().zip(row.tracking_number.clone());
    for (field, got, wanted) in [
        ("status", row.status.clone(), want.status.clone()),
        ("version", row.version.to_string(), want.version.to_string()),
        (
            "paid_minor",
            row.paid_minor.to_string(),
            want.paid_minor.to_string(),
        ),
        (
            "refunded_minor",
            row.refunded_minor.to_string(),
            want.refunded_minor.to_string(),
        ),
        (
            "refund_due_minor",
            format!("{due:?}"),
            format!("{:?}", Some(want.refund_due_minor)),
        ),
        (
            "refund_required",
            row.refund_required.to_string(),
            want.refund_required.to_string(),
        ),
        (
            "shipment",
            format!("{shipment:?}"),
            format!("{:?}", want.shipment),
        ),
        (
            "cancellation_reason",
            format!("{:?}", row.cancellation_reason),
            format!("{:?}", want.cancellation_reason),
        ),
    ] {
        if got != wanted {
            diffs.push(format!("{field}: expected {wanted}, got {got}"));
        }
    }

    // 1. The ledger (invariant 2: one row per id; paid and refunded are its sums).
    let ledger: Vec<(String, String, i64)> = sqlx::query_as(
        "SELECT transfer_id, direction, amount_minor FROM transfers WHERE order_id = $1",
    )
    .bind(script.order_id)
    .fetch_all(pool)
    .await?;
    let sum = |direction: &str| -> i64 {
        ledger
            .iter()
            .filter(|l| l.1 == direction)
            .map(|l| l.2)
            .sum()
    };
    if (sum("in"), sum("out")) != (row.paid_minor, row.refunded_minor) {
        diffs.push(format!(
            "paid {} and refunded {} are not the ledger's sums {} and {}",
            row.paid_minor,
            row.refunded_minor,
            sum("in"),
            sum("out")
        ));
    }
    let ledger: BTreeMap<String, (String, i64)> =
        ledger.into_iter().map(|(id, d, a)| (id, (d, a))).collect();
    if ledger != want.ledger {
        diffs.push(format!(
            "ledger: expected {:?}, got {ledger:?}",
            want.ledger
        ));
    }
    // Invariant 3, and never more back than came in.
    if (row.status == "PAID" || row.status == "SHIPPED") && row.paid_minor < script.amount {
        diffs.push(format!("{} with only {} paid", row.status, row.paid_minor));
    }
    if row.refunded_minor > row.paid_minor {
        diffs.push(format!(
            "refunded {} of {} paid",
            row.refunded_minor, row.paid_minor
        ));
    }

    // 1. The history (invariant 1).
    let history: Vec<History> = sqlx::query_as(
        "SELECT version, kind, from_status, to_status, transfer_id, cause_source \
         FROM order_transitions WHERE order_id = $1 ORDER BY version",
    )
    .bind(script.order_id)
    .fetch_all(pool)
    .await?;
    diffs.extend(check_history(&history, &row, want));

    // 2. The outbox (invariant 4): the model's events, each published.
    let outbox: Vec<Outbox> = sqlx::query_as(
        "SELECT event_id, event_type, \
                NOT EXISTS (SELECT 1 FROM outbox_waiting AS w WHERE w.id = outbox.id) AS published \
         FROM outbox WHERE order_id = $1 ORDER BY id",
    )
    .bind(script.order_id)
    .fetch_all(pool)
    .await?;
    // Clauses 2 and 3: the outbox, and the events as a subscriber received them.
    let refunds: BTreeMap<&str, Option<i64>> = want
        .ledger
        .iter()
        .filter(|(_, (direction, _))| direction == "out")
        .map(|(id, _)| {
            let at = history
                .iter()
                .find(|h| h.transfer_id.as_deref() == Some(id))
                .map(|h| h.version);
            (id.as_str(), at)
        })
        .collect();
    diffs.extend(events::check(&outbox, mine, &refunds, want));
    Ok((diffs, want.expired && row.status == "CANCELLED"))
}

/// Invariant 1 and the history of the causal run: contiguous versions, legal changes, each
/// status entered once, the model's kinds, each ledger id recorded by one row of its kind, and
/// the timer's cause on exactly the cancellation it made.
fn check_history(history: &[History], row: &Row, want: &Expected) -> Vec<String> {
    let mut diffs = vec![];
    let versions: Vec<i64> = history.iter().map(|h| h.version).collect();
    if versions != (1..=row.version).collect::<Vec<_>>() {
        diffs.push(format!(
            "history versions {versions:?} for version {}",
            row.version
        ));
    }
    let mut entered = vec![];
    for h in history
        .iter()
        .filter(|h| h.from_status.as_deref() != Some(h.to_status.as_str()))
    {
        if !LEGAL.contains(&(h.from_status.as_deref(), h.to_status.as_str())) {
            diffs.push(format!(
                "illegal transition {:?} -> {}",
                h.from_status, h.to_status
            ));
        }
        if entered.contains(&h.to_status) {
            diffs.push(format!("entered {} twice", h.to_status));
        }
        entered.push(h.to_status.clone());
    }
    let mut kinds: Vec<String> = history.iter().map(|h| h.kind.clone()).collect();
    kinds.sort();
    if kinds != want.kinds {
        diffs.push(format!(
            "history kinds: expected {:?}, got {kinds:?}",
            want.kinds
        ));
    }
    let mut recorded: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for h in history {
        if let Some(id) = &h.transfer_id {
            recorded.entry(id).or_default().push(&h.kind);
        }
    }
    for (id, (direction, _)) in &want.ledger {
        let kind = if direction == "out" {
            "refund_recorded"
        } else {
            "payment_recorded or paid"
        };
        match recorded.remove(id.as_str()).as_deref() {
            Some([k]) if kind.split(" or ").any(|w| w == *k) => {}
            other => diffs.push(format!(
                "{id} recorded by history rows {other:?}, not one {kind}"
            )),
        }
    }
    if !recorded.is_empty() {
        diffs.push(format!("history records unknown transfers {recorded:?}"));
    }
    let timer: Vec<&str> = history
        .iter()
        .filter(|h| h.cause_source == "timer")
        .map(|h| h.kind.as_str())
        .collect();
    let wanted: &[&str] = if want.expired { &["cancelled"] } else { &[] };
    if timer != wanted {
        diffs.push(format!("timer changes: expected {wanted:?}, got {timer:?}"));
    }
    diffs
}
