//! The domain as the model sees it: the order's states and the decisions of the commands, cut to
//! what decides a write (docs/contract.md "Transitions", "Events per change", "Money"). Every
//! order costs one unit of money, so one payment completes it and a second is money beyond the
//! amount; refunds are left out (they change no status and race as payments do).

/// An order, by its index in the model (`A` is 0, `B` is 1).
pub type OrderId = u8;
/// A payment's `transfer_id`; the ledger's one id space.
pub type TransferId = u8;
/// A 64-bit transaction id (`xid8`), as small numbers in the order Postgres hands them out.
pub type Xid = u8;

/// What every order costs, in the model's units.
pub const AMOUNT: u8 = 1;

/// The status of an order (docs/contract.md "Transitions").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Status {
    PendingPayment,
    Paid,
    Shipped,
    Cancelled,
}

/// An order row as the guarded write reads and writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Order {
    pub status: Status,
    pub version: u8,
    pub paid: u8,
    pub refund_required: bool,
    /// `orders.last_event_pos`: the highest outbox position its events took.
    pub last_event_pos: Xid,
}

/// An outbound event type (docs/contract.md "Events per change").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Event {
    Created,
    Paid,
    Shipped,
    Cancelled,
    RefundRequired,
    /// A replayed dead letter: a raw message, of no order.
    Replay,
}

/// A command on an order, as either door hands it in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Command {
    Place(OrderId),
    Pay {
        order: OrderId,
        transfer: TransferId,
    },
    Ship(OrderId),
    Cancel(OrderId),
}

impl Command {
    pub fn order(self) -> OrderId {
        match self {
            Command::Place(order)
            | Command::Pay { order, .. }
            | Command::Ship(order)
            | Command::Cancel(order) => order,
        }
    }

    pub fn transfer(self) -> Option<TransferId> {
        match self {
            Command::Pay { transfer, .. } => Some(transfer),
            Command::Place(_) | Command::Ship(_) | Command::Cancel(_) => None,
        }
    }
}

/// A change decided on an order: the row it leaves, and the history and outbox rows it writes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Change {
    /// The status and version the order must still have; `None` places it.
    pub expected: Option<(Status, u8)>,
    pub next: Order,
    /// The status the history row enters, when the change moves the order (creation included):
    /// what the partial unique index `(order_id, to_status)` holds.
    pub enters: Option<Status>,
    /// The ledger row it records.
    pub transfer: Option<TransferId>,
    pub events: Vec<Event>,
}

/// A command's decision on what it read.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Decided {
    AlreadyApplied,
    Write(Change),
    /// Refused by the domain; `later`: it may succeed later (premature), else final.
    Refused {
        later: bool,
    },
    NotFound,
}

/// `command`'s decision on the order it read and the ledger row of its transfer id (the order that
/// id was recorded for), as `src/app/` decides it.
pub fn decide(command: Command, order: Option<Order>, entry: Option<OrderId>) -> Decided {
    match command {
        Command::Place(_) => match order {
            None => Decided::Write(Change {
                expected: None,
                next: Order {
                    status: Status::PendingPayment,
                    version: 1,
                    paid: 0,
                    refund_required: false,
                    last_event_pos: 0,
                },
                enters: Some(Status::PendingPayment),
                transfer: None,
                events: vec![Event::Created],
            }),
            // The model places one content per id: the same content is a replay.
            Some(_) => Decided::AlreadyApplied,
        },
        Command::Pay {
            order: id,
            transfer,
        } => match (entry, order) {
            (Some(recorded_for), _) if recorded_for == id => Decided::AlreadyApplied,
            (Some(_), _) => Decided::Refused { later: false },
            (None, None) => Decided::NotFound,
            (None, Some(order)) => Decided::Write(pay(order, transfer)),
        },
        Command::Ship(_) => match order.map(|o| (o.status, o)) {
            None => Decided::NotFound,
            Some((Status::Paid, order)) => {
                Decided::Write(moved(order, Status::Shipped, vec![Event::Shipped]))
            }
            Some((Status::Shipped, _)) => Decided::AlreadyApplied,
            // PENDING_PAYMENT → SHIPPED: its payment may still be on its way.
            Some((Status::PendingPayment, _)) => Decided::Refused { later: true },
            Some((Status::Cancelled, _)) => Decided::Refused { later: false },
        },
        Command::Cancel(_) => match order.map(|o| (o.status, o)) {
            None => Decided::NotFound,
            Some((Status::PendingPayment, order)) => {
                let mut events = vec![Event::Cancelled];
                if order.paid > 0 {
                    events.push(Event::RefundRequired);
                }
                let mut change = moved(order, Status::Cancelled, events);
                change.next.refund_required = order.paid > 0;
                Decided::Write(change)
            }
            Some((Status::Cancelled, _)) => Decided::AlreadyApplied,
            Some((Status::Paid | Status::Shipped, _)) => Decided::Refused { later: false },
        },
    }
}

/// A payment of one unit recorded on `order`: it completes a pending order, and turns
/// `refund_required` on when it leaves money to give back.
fn pay(order: Order, transfer: TransferId) -> Change {
    let paid = order.paid + 1;
    let completes = order.status == Status::PendingPayment && paid >= AMOUNT;
    let status = if completes {
        Status::Paid
    } else {
        order.status
    };
    let due = match status {
        Status::Cancelled => paid,
        Status::PendingPayment | Status::Paid | Status::Shipped => paid.saturating_sub(AMOUNT),
    };
    let mut events = Vec::new();
    if completes {
        events.push(Event::Paid);
    }
    if due > 0 && !order.refund_required {
        events.push(Event::RefundRequired);
    }
    Change {
        expected: Some((order.status, order.version)),
        next: Order {
            status,
            version: order.version + 1,
            paid,
            refund_required: due > 0,
            last_event_pos: order.last_event_pos,
        },
        enters: completes.then_some(Status::Paid),
        transfer: Some(transfer),
        events,
    }
}

/// `order` moved to `to`, writing `events`.
fn moved(order: Order, to: Status, events: Vec<Event>) -> Change {
    Change {
        expected: Some((order.status, order.version)),
        next: Order {
            status: to,
            version: order.version + 1,
            ..order
        },
        enters: Some(to),
        transfer: None,
        events,
    }
}
