//! The commands as one type: [`Request`] names any of them (place, record a payment or a
//! refund, ship, cancel), so a door that receives them mixed — the AMQP consumer — hands them in
//! together (`App::apply_batch`, `batch/`). Each request runs the very command its own
//! method runs; this module only dispatches to it.

use super::order_command::{Answer, Decided, OrderCommand};
use super::place::Place;
use super::record_transfer::RecordTransfer;
use super::status_change::{Asked, StatusChange};
use super::{AppError, Receipt};
use crate::domain::{
    BoundedText, LedgerEntry, NewOrder, Order, OrderId, Payment, Refund, Shipment, TransferId,
    VersionMatch,
};
use crate::store::order_changes::Snapshot;
use crate::telemetry::TraceContext;

/// A command, as a door that receives them mixed hands it in. No If-Match: events carry none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Place(NewOrder),
    RecordPayment(Payment),
    RecordRefund(Refund),
    Ship {
        order_id: OrderId,
        shipment: Shipment,
    },
    Cancel {
        order_id: OrderId,
        reason: BoundedText,
    },
}

impl Request {
    /// The order the request changes (or places).
    pub fn order_id(&self) -> OrderId {
        match self {
            Request::Place(new) => new.id,
            Request::RecordPayment(payment) => payment.order_id,
            Request::RecordRefund(refund) => refund.order_id,
            Request::Ship { order_id, .. } | Request::Cancel { order_id, .. } => *order_id,
        }
    }
}

/// What a request's command returns: the order, or for money the receipt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    Order(Order),
    Receipt(Receipt),
}

/// A request's own command, with the trace its events carry: an [`OrderCommand`] that reads and
/// decides as that command does.
pub(super) enum Requested<'a> {
    Place(Place<'a>),
    Record(RecordTransfer<'a>),
    Change(StatusChange<'a>),
}

impl<'a> Requested<'a> {
    pub(super) fn of(request: &'a Request, trace: &'a TraceContext) -> Self {
        match request {
            Request::Place(new) => Requested::Place(Place {
                new: new.clone(),
                trace,
            }),
            Request::RecordPayment(payment) => Requested::Record(RecordTransfer {
                transfer: payment.clone().into(),
                trace,
            }),
            Request::RecordRefund(refund) => Requested::Record(RecordTransfer {
                transfer: refund.clone().into(),
                trace,
            }),
            Request::Ship { order_id, shipment } => Requested::Change(StatusChange::new(
                *order_id,
                Asked::Ship(shipment),
                VersionMatch::Any,
                trace,
            )),
            Request::Cancel { order_id, reason } => Requested::Change(StatusChange::new(
                *order_id,
                Asked::Cancel(reason),
                VersionMatch::Any,
                trace,
            )),
        }
    }
}

impl OrderCommand for Requested<'_> {
    type Output = Effect;

    fn reads(&self) -> (OrderId, Option<&TransferId>) {
        match self {
            Requested::Place(place) => place.reads(),
            Requested::Record(record) => record.reads(),
            Requested::Change(change) => change.reads(),
        }
    }

    fn decide(&self, found: Snapshot) -> Result<Decided<'_, Effect>, AppError> {
        Ok(match self {
            Requested::Place(place) => map(place.decide(found)?, Effect::Order),
            Requested::Record(record) => map(record.decide(found)?, Effect::Receipt),
            Requested::Change(change) => map(change.decide(found)?, Effect::Order),
        })
    }
}

impl Answer for Effect {
    /// A change that recorded a ledger entry answers with the receipt, any other with the order.
    fn written(order: Order, entry: Option<LedgerEntry>) -> Result<Self, AppError> {
        Ok(match entry {
            Some(entry) => Effect::Receipt(Receipt { order, entry }),
            None => Effect::Order(order),
        })
    }

    fn replayed(found: Snapshot) -> Result<Self, AppError> {
        if found.entry.is_some() {
            Receipt::replayed(found).map(Effect::Receipt)
        } else {
            Order::replayed(found).map(Effect::Order)
        }
    }
}

/// A decision of a command, with its value made an [`Effect`].
fn map<'a, T>(decided: Decided<'a, T>, effect: fn(T) -> Effect) -> Decided<'a, Effect> {
    match decided {
        Decided::AlreadyApplied(value) => Decided::AlreadyApplied(effect(value)),
        Decided::Write(change) => Decided::Write(change),
    }
}
