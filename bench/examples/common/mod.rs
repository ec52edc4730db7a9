//! What the relay and retention examples share: placing an order through the application layer
//! (one `order.created` row in the outbox), the server's WAL position, the median of a figure
//! over rounds, and settings read from the environment (the relay's linger among them). Each
//! example includes this module (`mod common;`) and uses a part of it.
#![allow(dead_code)]

use order_service::app::App;
use order_service::domain::{
    AmountMinor, Cause, Currency, CustomerId, EventId, Money, NewOrder, OrderId,
};
use sqlx::PgPool;

/// Places a new order of 1.00 EUR for `customer`, as a consumer delivery would (the cause is an
/// AMQP event named after the customer); returns its id once it is committed.
pub async fn place(app: &App, customer: &str) -> anyhow::Result<OrderId> {
    let id = OrderId::generate();
    let new = NewOrder {
        id,
        customer_id: CustomerId::parse(customer)?,
        amount: Money::new(AmountMinor::parse(100)?, Currency::parse("EUR")?),
    };
    app.place(
        new,
        &Cause::Amqp {
            event_id: EventId::parse(customer)?,
        },
        &order_service::telemetry::TraceContext::start(),
    )
    .await?;
    Ok(id)
}

/// The server's current WAL position, in bytes: the difference of two is the WAL written
/// between them.
pub async fn wal_lsn(pool: &PgPool) -> anyhow::Result<f64> {
    let lsn: f64 = sqlx::query_scalar("SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::float8")
        .fetch_one(pool)
        .await?;
    Ok(lsn)
}

/// The median of `figure` over `rounds` (the upper one of an even count).
pub fn median<T>(rounds: &[T], figure: impl Fn(&T) -> f64) -> f64 {
    let mut values: Vec<f64> = rounds.iter().map(figure).collect();
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The number in the environment variable `name`, if it is set to one, else `default`: what an
/// example lets its user change to compare values.
pub fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// The linger of the relay an example runs: `OUTBOX_LINGER_MS` if set, else the service's
/// default.
pub fn linger_ms() -> u64 {
    env_or(
        "OUTBOX_LINGER_MS",
        order_service::config::DEFAULT_OUTBOX_LINGER_MS,
    )
}
