//! What the database holds about an order (its state, money, ledger, history, outbox), read
//! straight from the harness's database; waits for a state; a row lock a test holds.

use uuid::Uuid;

use order_service_testkit::eventually;

use super::{Harness, WAIT};

impl Harness {
    /// The order's `(status, version, paid_minor)`, if it exists.
    pub async fn order_state(&self, order: Uuid) -> Option<(String, i64, i64)> {
        sqlx::query_as("SELECT status, version, paid_minor FROM orders WHERE id = $1")
            .bind(order)
            .fetch_optional(&self.db.pool)
            .await
            .expect("read order")
    }

    /// The order's `(paid_minor, refunded_minor, refund_required)`, if it exists.
    pub async fn order_money(&self, order: Uuid) -> Option<(i64, i64, bool)> {
        sqlx::query_as(
            "SELECT paid_minor, refunded_minor, refund_required FROM orders WHERE id = $1",
        )
        .bind(order)
        .fetch_optional(&self.db.pool)
        .await
        .expect("read order")
    }

    /// Waits until the order has `refunded` refunded; returns its money as
    /// [`Harness::order_money`] does.
    pub async fn wait_for_refunded(&self, order: Uuid, refunded: i64) -> (i64, i64, bool) {
        eventually(
            &format!("order {order} to have {refunded} refunded"),
            WAIT,
            || async { self.order_money(order).await.filter(|m| m.1 == refunded) },
        )
        .await
    }

    /// The order's ledger rows: `(transfer_id, direction, amount_minor, source)`, oldest first.
    pub async fn transfers(&self, order: Uuid) -> Vec<(String, String, i64, String)> {
        sqlx::query_as(
            "SELECT transfer_id, direction, amount_minor, source FROM transfers \
             WHERE order_id = $1 ORDER BY received_at, transfer_id",
        )
        .bind(order)
        .fetch_all(&self.db.pool)
        .await
        .expect("read the ledger")
    }

    /// Waits until the order is in `status`.
    pub async fn wait_for_status(&self, order: Uuid, status: &str) -> (String, i64, i64) {
        eventually(&format!("order {order} to be {status}"), WAIT, || async {
            self.order_state(order).await.filter(|s| s.0 == status)
        })
        .await
    }

    /// Locks `order`'s row in a transaction the caller holds (until it rolls it back).
    pub async fn lock_order(&self, order: Uuid) -> sqlx::Transaction<'static, sqlx::Postgres> {
        let mut lock = self.db.pool.begin().await.expect("begin");
        sqlx::query("SELECT 1 FROM orders WHERE id = $1 FOR UPDATE")
            .bind(order)
            .execute(&mut *lock)
            .await
            .expect("lock the order");
        lock
    }

    pub async fn history_kinds(&self, order: Uuid) -> Vec<(i64, String)> {
        sqlx::query_as(
            "SELECT version, kind FROM order_transitions WHERE order_id = $1 ORDER BY version",
        )
        .bind(order)
        .fetch_all(&self.db.pool)
        .await
        .expect("read history")
    }

    pub async fn outbox_types(&self, order: Uuid) -> Vec<String> {
        sqlx::query_scalar("SELECT event_type FROM outbox WHERE order_id = $1 ORDER BY id")
            .bind(order)
            .fetch_all(&self.db.pool)
            .await
            .expect("read outbox")
    }
}
