//! The design's own minimal SQL: what the REST door needs at the least for one payment, without
//! what the service adds around it (HTTP, JSON, the relay, publishing). Each payment goes
//! through the service's application layer in-process, `App::record` with a REST cause (a key
//! and a fingerprint), as the handler calls it:
//!
//! ```text
//! SELECT …   -- one statement: the order, the ledger row of the transfer id, the key's holder
//! WITH …     -- one guarded statement: order, ledger (holding the key), history and outbox rows
//! ```
//!
//! each in autocommit (the runner opens no transaction), on a pool as large as the run's
//! concurrency, with the relays' wake-up the application layer sends (a NOTIFY at most every
//! 20 ms). No relay runs, so the outbox rows stay unpublished. Against the one-statement
//! reference it says what the design costs (a read before the write, the key on its row); the
//! REST door against it says what the service adds (bench/README.md).

use order_service::app::App;
use order_service::app::fingerprint;
use order_service::domain::{
    self, AmountMinor, Cause, ClientId, Currency, IdempotencyKey, Money, OrderId, TransferId,
};
use order_service::telemetry::TraceContext;
use uuid::Uuid;

use crate::workload::{AMOUNT_MINOR, CURRENCY, Payment};

/// The client the payments are recorded for: the scope of their keys.
const CLIENT: &str = "bench";

/// Pays `order_id`'s seeded order as a REST request with its own Idempotency-Key would:
/// `true` when the payment took effect, `false` when the key or the ledger replayed it.
pub async fn pay(app: &App, order_id: Uuid) -> anyhow::Result<bool> {
    let payment = Payment::for_order(order_id);
    let path = format!("/v1/orders/{order_id}/payments");
    let body: serde_json::Value = serde_json::from_slice(&payment.body())?;
    let cause = Cause::Api {
        client: ClientId::parse(CLIENT)?,
        key: IdempotencyKey::parse(&format!("key-{}", payment.transfer_id))?,
        fingerprint: fingerprint::of_request("POST", &path, &body),
    };
    let transfer = domain::Payment {
        transfer_id: TransferId::parse(&payment.transfer_id)?,
        order_id: OrderId::from_uuid(order_id),
        money: Money::new(
            AmountMinor::parse(AMOUNT_MINOR)?,
            Currency::parse(CURRENCY)?,
        ),
    };
    let outcome = app.record(transfer, &cause, &TraceContext::start()).await?;
    Ok(matches!(outcome, order_service::app::Outcome::Applied(_)))
}
