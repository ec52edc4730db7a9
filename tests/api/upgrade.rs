//! Upgrades: the refunds-and-expiry migration applied to a database that already holds orders, as
//! the previous release left them, keeps what they mean and lets refunds settle them.

use uuid::Uuid;

use order_service::app::MAX_PAGE;
use order_service::app::{App, PageAfter};
use order_service::domain::{Cause, Direction, EventId, Money, OrderId, Refund, TransferId};
use order_service::store;

use order_service_testkit::TestDb;

/// The first migration of refunds, expiry and orders by customer.
const REFUNDS_MIGRATION: &str = "20261122000002";

/// An order, its payments and its history as the previous release wrote them (no
/// `refunded_minor`, no `direction`): each payment recorded by a change of its own, the last one
/// of a `PAID` order moving it to `PAID`, and a `CANCELLED` order cancelled after its payments.
async fn legacy_order(
    db: &TestDb,
    status: &str,
    amount: i64,
    paid: &[i64],
    refund_required: bool,
) -> Uuid {
    let id = Uuid::new_v4();
    let total: i64 = paid.iter().sum();
    let version = 1 + i64::try_from(paid.len()).unwrap() + i64::from(status == "CANCELLED");
    sqlx::query(
        "INSERT INTO orders (id, customer_id, amount_minor, currency, status, version, paid_minor, \
         refund_required) VALUES ($1, 'c-legacy', $2, 'EUR', $3, $4, $5, $6)",
    )
    .bind(id)
    .bind(amount)
    .bind(status)
    .bind(version)
    .bind(total)
    .bind(refund_required)
    .execute(&db.pool)
    .await
    .expect("a legacy order");
    for (n, amount) in paid.iter().enumerate() {
        sqlx::query(
            "INSERT INTO transfers (transfer_id, order_id, amount_minor, currency, source) \
             VALUES ($1, $2, $3, 'EUR', 'amqp')",
        )
        .bind(format!("legacy-{id}-{n}"))
        .bind(id)
        .bind(amount)
        .execute(&db.pool)
        .await
        .expect("a legacy payment");
    }
    let pending = Some("PENDING_PAYMENT");
    let mut changes = vec![("created", None, "PENDING_PAYMENT", None)];
    for n in 0..paid.len() {
        let completes = status == "PAID" && n + 1 == paid.len();
        let (kind, to) = if completes {
            ("paid", "PAID")
        } else {
            ("payment_recorded", "PENDING_PAYMENT")
        };
        changes.push((kind, pending, to, Some(format!("legacy-{id}-{n}"))));
    }
    if status == "CANCELLED" {
        changes.push(("cancelled", pending, "CANCELLED", None));
    }
    for (version, (kind, from, to, transfer)) in (1_i64..).zip(changes) {
        sqlx::query(
            "INSERT INTO order_transitions (order_id, version, kind, from_status, to_status, \
             transfer_id, cause_source, event_id) VALUES ($1, $2, $3, $4, $5, $6, 'amqp', $7)",
        )
        .bind(id)
        .bind(version)
        .bind(kind)
        .bind(from)
        .bind(to)
        .bind(transfer)
        .bind(format!("legacy-event-{id}-{version}"))
        .execute(&db.pool)
        .await
        .expect("a legacy history row");
    }
    id
}

fn refund(order: Uuid, id: &str, amount: i64) -> Refund {
    Refund {
        refund_id: TransferId::parse(id).unwrap(),
        order_id: OrderId::from_uuid(order),
        money: Money::parse(amount, "EUR").unwrap(),
    }
}

#[tokio::test]
async fn the_refund_migration_keeps_what_existing_orders_meant_and_lets_refunds_settle_them() {
    let db = TestDb::create_before_migration(REFUNDS_MIGRATION).await;
    let pending = legacy_order(&db, "PENDING_PAYMENT", 1000, &[300], false).await;
    let overpaid = legacy_order(&db, "PAID", 1000, &[700, 500], true).await;
    let cancelled = legacy_order(&db, "CANCELLED", 1000, &[400], true).await;

    let mut connection = db.pool.acquire().await.unwrap();
    store::migrate(&mut connection)
        .await
        .expect("the new migrations apply over existing orders");
    drop(connection);

    let app = App::new(db.pool.clone());
    for (order, paid, due, flag) in [
        (pending, 300, 0, false),
        (overpaid, 1200, 200, true),
        (cancelled, 400, 400, true),
    ] {
        let read = app
            .order(OrderId::from_uuid(order))
            .await
            .expect("readable");
        assert_eq!(read.paid_minor, paid, "{order}");
        assert_eq!(read.refunded_minor, 0, "{order}");
        assert_eq!(read.refund_due_minor(), due, "{order}");
        assert_eq!(
            read.refund_required, flag,
            "{order}: the flag keeps its meaning"
        );
        let ledger = app
            .payments(
                OrderId::from_uuid(order),
                PageAfter {
                    limit: MAX_PAGE,
                    after: None,
                },
            )
            .await
            .unwrap();
        assert!(ledger.next.is_none());
        let payments = if order == overpaid { 2 } else { 1 };
        assert_eq!(ledger.items.len(), payments, "{order}");
        assert!(
            ledger
                .items
                .iter()
                .all(|e| e.transfer.direction == Direction::In),
            "existing ledger rows are payments"
        );
    }

    let cause = Cause::Amqp {
        event_id: EventId::parse("upgrade-refund").unwrap(),
    };
    for (order, amount) in [(overpaid, 200), (cancelled, 400)] {
        let settled = app
            .record(
                refund(order, &format!("refund-{order}"), amount),
                &cause,
                &order_service::telemetry::TraceContext::start(),
            )
            .await
            .expect("a refund settles a legacy order")
            .into_value()
            .order;
        assert_eq!(settled.refund_due_minor(), 0);
        assert!(!settled.refund_required);
    }
}
