//! Every sum of money stays exact in a double (2^53 − 1, docs/contract.md "Money"): a payment
//! event that would take an order's paid sum past it is dead-lettered with its reason, and the
//! order and its ledger stay as they were.

use uuid::Uuid;

use crate::helpers::Harness;

#[tokio::test]
async fn a_payment_event_past_the_exact_sum_is_dead_lettered_with_its_reason_and_changes_nothing() {
    let mut h = Harness::start().await;
    h.spawn_consumer();
    let order = Uuid::new_v4();
    h.place("placed", order, 1000).await;
    h.wait_for_status(order, "PENDING_PAYMENT").await;
    // 9,007 payments of 10^12, seeded straight into the ledger.
    let held = h.db.seed_largest_payments(order, 9_007, "amqp").await;
    let room = order_service::domain::MAX_SUM_MINOR - held;

    h.pay("one-too-many", order, "t-over", room + 1).await;

    let letters = h.wait_for_dead_letters(1).await;
    assert!(
        letters[0].reason.contains("9007199254740991"),
        "{}",
        letters[0].reason
    );
    assert_eq!(h.db.count("transfers").await, 9_007);
    let paid: i64 = sqlx::query_scalar("SELECT paid_minor FROM orders WHERE id = $1")
        .bind(order)
        .fetch_one(&h.db.pool)
        .await
        .expect("the order");
    assert_eq!(paid, held);
}
