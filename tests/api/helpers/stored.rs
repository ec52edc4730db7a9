//! What the database holds, read past the API: row counts, an order's row, ledger, outbox and
//! money (checked against its ledger), its history checked against invariant 1, and sessions
//! waiting on a lock.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{Value, json};
use uuid::Uuid;

use order_service_testkit::eventually;

use super::TestApp;

impl TestApp {
    /// `SELECT count(*)` of a whole table.
    pub async fn count(&self, table: &str) -> i64 {
        self.db.count(table).await
    }

    /// Rows of every table, to prove a rejected request changed nothing.
    pub async fn snapshot(&self) -> [i64; 4] {
        [
            self.count("orders").await,
            self.count("transfers").await,
            self.count("order_transitions").await,
            self.count("outbox").await,
        ]
    }

    /// The order's row as stored.
    pub async fn row(&self, order: Uuid) -> OrderRow {
        sqlx::query_as(
            "SELECT status, version, paid_minor, refund_required FROM orders WHERE id = $1",
        )
        .bind(order)
        .fetch_one(&self.pool)
        .await
        .expect("read the order row")
    }

    /// The order's ledger rows as stored: `(transfer_id, amount_minor, currency, source)`.
    pub async fn transfers(&self, order: Uuid) -> Vec<(String, i64, String, String)> {
        sqlx::query_as(
            "SELECT transfer_id, amount_minor, currency, source FROM transfers \
             WHERE order_id = $1 ORDER BY received_at, transfer_id",
        )
        .bind(order)
        .fetch_all(&self.pool)
        .await
        .expect("read the ledger")
    }

    /// The history, checked against invariant 1 (`docs/contract.md#invariant-1`): one entry per version
    /// `1..=version` of the stored order, each `from` the previous `to`, every status change a
    /// legal one, and no status entered twice.
    pub async fn checked_history(&self, order: Uuid) -> Vec<Value> {
        let version = self.row(order).await.version;
        let history = self.history(order).await;
        assert_history_is_contiguous(&history, version);
        history
    }

    /// The order's money as stored, checked against the ledger: `paid_minor` and
    /// `refunded_minor` must equal the sums of its incoming and outgoing rows.
    pub async fn checked_money(&self, order: Uuid) -> MoneyRow {
        let money: MoneyRow = sqlx::query_as(
            "SELECT paid_minor, refunded_minor, refund_required FROM orders WHERE id = $1",
        )
        .bind(order)
        .fetch_one(&self.pool)
        .await
        .expect("read the order's money");
        let (paid_in, refunded_out): (i64, i64) = sqlx::query_as(
            "SELECT COALESCE(sum(amount_minor) FILTER (WHERE direction = 'in'), 0)::bigint, \
                    COALESCE(sum(amount_minor) FILTER (WHERE direction = 'out'), 0)::bigint \
             FROM transfers WHERE order_id = $1",
        )
        .bind(order)
        .fetch_one(&self.pool)
        .await
        .expect("sum the ledger");
        assert_eq!(
            (money.paid_minor, money.refunded_minor),
            (paid_in, refunded_out),
            "the order row disagrees with its ledger"
        );
        money
    }

    /// The order's ledger rows as stored, with their direction:
    /// `(transfer_id, direction, amount_minor)`, oldest first.
    pub async fn directed_transfers(&self, order: Uuid) -> Vec<(String, String, i64)> {
        sqlx::query_as(
            "SELECT transfer_id, direction, amount_minor FROM transfers \
             WHERE order_id = $1 ORDER BY received_at, transfer_id",
        )
        .bind(order)
        .fetch_all(&self.pool)
        .await
        .expect("read the ledger")
    }

    /// The event types in the outbox for one order, in insertion order.
    pub async fn outbox_types(&self, order: Uuid) -> Vec<String> {
        sqlx::query_scalar("SELECT event_type FROM outbox WHERE order_id = $1 ORDER BY id")
            .bind(order)
            .fetch_all(&self.pool)
            .await
            .expect("read outbox")
    }

    /// Waits until `n` sessions of this test's database are blocked on a lock: requests queued
    /// behind a row or key that another transaction holds.
    pub async fn wait_for_lock_waits(&self, n: i64) {
        eventually(
            &format!("{n} sessions to wait on a lock"),
            Duration::from_secs(10),
            || async {
                let waiting: i64 = sqlx::query_scalar(
                    "SELECT count(*) FROM pg_stat_activity \
                     WHERE datname = current_database() AND wait_event_type = 'Lock'",
                )
                .fetch_one(&self.pool)
                .await
                .expect("read pg_stat_activity");
                (waiting >= n).then_some(())
            },
        )
        .await;
    }
}

/// An order row: `status`, `version`, `paid_minor`, `refund_required`.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct OrderRow {
    pub status: String,
    pub version: i64,
    pub paid_minor: i64,
    pub refund_required: bool,
}

/// An order's money as stored: `paid_minor`, `refunded_minor`, `refund_required`.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct MoneyRow {
    pub paid_minor: i64,
    pub refunded_minor: i64,
    pub refund_required: bool,
}

/// See [`TestApp::checked_history`].
#[track_caller]
fn assert_history_is_contiguous(history: &[Value], version: i64) {
    let versions: Vec<i64> = history
        .iter()
        .map(|entry| entry["version"].as_i64().expect("a version"))
        .collect();
    assert_eq!(versions, (1..=version).collect::<Vec<_>>(), "{history:#?}");
    assert!(history[0]["from"].is_null(), "{history:#?}");
    for pair in history.windows(2) {
        assert_eq!(pair[1]["from"], pair[0]["to"], "{history:#?}");
    }
    let legal = [
        (Value::Null, "PENDING_PAYMENT"),
        (json!("PENDING_PAYMENT"), "PAID"),
        (json!("PENDING_PAYMENT"), "CANCELLED"),
        (json!("PAID"), "SHIPPED"),
    ];
    let mut entered = HashSet::new();
    for entry in history.iter().filter(|e| e["from"] != e["to"]) {
        let to = entry["to"].as_str().expect("a status");
        assert!(
            legal
                .iter()
                .any(|(from, t)| *from == entry["from"] && *t == to),
            "illegal change {} -> {to}: {history:#?}",
            entry["from"]
        );
        assert!(entered.insert(to), "{to} entered twice: {history:#?}");
    }
}
