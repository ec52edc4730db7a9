//! The protocol as a [`Model`]: its bounds and workload, the variant checked, the actions
//! (docs/architecture.md "The model of the protocol" says which code each stands for) and the
//! invariants of docs/contract.md "Invariants" as properties.

use stateright::{Model, Property};

use crate::domain::{Command, Event, Order, OrderId, Status};
use crate::state::{
    Answer, Copy, Db, HistoryRow, OrderSlot, OutboxRow, Relay, Rest, Stage, State, Txn,
};

/// Which protocol is checked: the service's, or one deliberately broken in one place, to show
/// that the invariant guarding that place catches it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// The protocol as built (with the relay's new log design).
    Faithful,
    /// The optimistic check removed: the guarded UPDATE without `status = … AND version = …`,
    /// and the history without `UNIQUE (order_id, version)`, which backs it up.
    NoVersionGuard,
    /// Only the UPDATE's guard removed; the history's `UNIQUE (order_id, version)` still stands.
    UpdateGuardOnlyDropped,
    /// `transfers` without its primary key on `transfer_id`.
    NoLedgerUnique,
    /// Outbox positions by transaction id alone: `pos = pg_current_xact_id()`.
    PosIsOwnXid,
    /// The key looked for only in the table being written (no `idempotency_key_held_elsewhere`).
    KeyPerTable,
    /// A relay that reads every committed row past its cursor, ignoring the xmin horizon.
    NoHorizon,
}

impl Variant {
    pub fn version_guard(self) -> bool {
        !matches!(
            self,
            Variant::NoVersionGuard | Variant::UpdateGuardOnlyDropped
        )
    }
    pub fn history_version_unique(self) -> bool {
        self != Variant::NoVersionGuard
    }
    pub fn ledger_unique(self) -> bool {
        self != Variant::NoLedgerUnique
    }
    pub fn pos_is_own_xid(self) -> bool {
        self == Variant::PosIsOwnXid
    }
    pub fn key_across_tables(self) -> bool {
        self != Variant::KeyPerTable
    }
    pub fn ignores_horizon(self) -> bool {
        self == Variant::NoHorizon
    }
}

/// A REST request of the one client, all under one Idempotency-Key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RestRequest {
    Cancel(OrderId),
    /// `POST /v1/dead-letters/{id}/replay` of the dead letter of this message.
    ReplayDeadLetter(u8),
}

/// The protocol, its workload and its bounds.
#[derive(Clone, Debug)]
pub struct Protocol {
    pub variant: Variant,
    /// Orders placed (and their `order.created` published) before the run.
    pub placed: Vec<bool>,
    /// The inbound messages, by index; each is published `copies[i]` times.
    pub messages: Vec<Command>,
    pub copies: Vec<u8>,
    pub rest: Vec<RestRequest>,
    /// Consumers, each running one batch at a time.
    pub workers: u8,
    /// Deliveries a batch takes at most (1 or 2).
    pub batch_size: u8,
    /// Deliveries of a premature message before it is dead-lettered (`AMQP_MAX_ATTEMPTS`).
    pub max_attempts: u8,
    /// Rounds of a set-based batch, and races an item may lose under its savepoint
    /// (`MAX_LOST_IN_BATCH`).
    pub rounds: u8,
    pub consumer_crashes: u8,
    pub relay_crashes: u8,
}

impl Protocol {
    /// The races the CI run checks: orders A and B placed; A's payment (published twice), B's
    /// payment, and B's payment reusing A's transfer id (a conflict, dead-lettered and parked);
    /// two consumers taking up to two deliveries each; a REST client cancelling B and replaying
    /// the parked dead letter under one Idempotency-Key; a relay that may die once between its
    /// confirms and its cursor's commit.
    pub fn races(variant: Variant) -> Self {
        Self {
            variant,
            placed: vec![true, true],
            messages: vec![
                Command::Pay {
                    order: 0,
                    transfer: 0,
                },
                Command::Pay {
                    order: 1,
                    transfer: 1,
                },
                Command::Pay {
                    order: 1,
                    transfer: 0,
                },
            ],
            copies: vec![2, 1, 1],
            rest: vec![RestRequest::Cancel(1), RestRequest::ReplayDeadLetter(2)],
            workers: 2,
            batch_size: 2,
            max_attempts: 2,
            rounds: 3,
            consumer_crashes: 0,
            relay_crashes: 1,
        }
    }

    /// The faults the CI run checks: order A placed, B not yet; A's payment,
    /// A's shipment (premature until A is paid: retried, then parked when its attempts run out),
    /// B's payment (premature until B is placed) and B's placement; two consumers taking up to
    /// two deliveries each, one of which may die once (before or after its commit).
    pub fn faults(variant: Variant) -> Self {
        Self {
            variant,
            placed: vec![true, false],
            messages: vec![
                Command::Pay {
                    order: 0,
                    transfer: 0,
                },
                Command::Ship(0),
                Command::Pay {
                    order: 1,
                    transfer: 1,
                },
                Command::Place(1),
            ],
            copies: vec![1, 1, 1, 1],
            rest: vec![],
            workers: 2,
            batch_size: 2,
            max_attempts: 2,
            rounds: 3,
            consumer_crashes: 1,
            relay_crashes: 0,
        }
    }

    /// The bounds, as one line for the test's output.
    pub fn bounds(&self) -> String {
        format!(
            "orders {}, messages {:?} with copies {:?}, REST {:?} under one key, {} workers, \
             batches of up to {}, {} attempts, {} rounds, {} consumer crash(es), {} relay crash(es)",
            self.placed.len(),
            self.messages,
            self.copies,
            self.rest,
            self.workers,
            self.batch_size,
            self.max_attempts,
            self.rounds,
            self.consumer_crashes,
            self.relay_crashes
        )
    }

    /// Whether nothing is left to do.
    pub fn quiescent(&self, s: &State) -> bool {
        let mut actions = Vec::new();
        self.actions(s, &mut actions);
        actions.is_empty()
    }

    /// The next state after `action`, and what happened, for a trace.
    pub fn step(&self, last: &State, action: &Action) -> (State, String) {
        let mut s = last.clone();
        let note = match *action {
            Action::Take { worker, ref copies } => self.take(&mut s, worker, copies.clone()),
            Action::Read { worker } => self.read(&mut s, worker),
            Action::Write { worker } => self.write(&mut s, worker),
            Action::GiveUp { worker } => self.give_up(&mut s, worker),
            Action::Commit { worker } => {
                let committed = self.commit(&mut s, worker);
                format!("{committed}; {}", self.settle(&mut s, worker))
            }
            Action::CommitAndCrash { worker } => {
                let committed = self.commit(&mut s, worker);
                format!("{committed}; {}", self.crash(&mut s, worker))
            }
            Action::Crash { worker } => self.crash(&mut s, worker),
            Action::RestRead(request) => self.rest_read(&mut s, request),
            Action::RestWrite(request) => self.rest_write(&mut s, request),
            Action::RelayPublish => {
                let published = self.publish(&mut s);
                format!("{published}; {}", self.commit_cursor(&mut s))
            }
            Action::RelayPublishAndDie => {
                let published = self.publish(&mut s);
                format!("{published}; {}", self.relay_crash(&mut s))
            }
        };
        (s, note)
    }
}

/// One step of one actor.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    Take {
        worker: Txn,
        copies: Vec<Copy>,
    },
    Read {
        worker: Txn,
    },
    Write {
        worker: Txn,
    },
    GiveUp {
        worker: Txn,
    },
    /// The commit, then the settlement (replacements confirmed, then acks).
    Commit {
        worker: Txn,
    },
    /// The commit, then the worker dies before settling: its deliveries come back.
    CommitAndCrash {
        worker: Txn,
    },
    /// The worker dies before its commit: its transaction is rolled back.
    Crash {
        worker: Txn,
    },
    RestRead(u8),
    RestWrite(u8),
    /// The relay reads, publishes with confirms and commits its cursor.
    RelayPublish,
    /// The relay reads and publishes, then dies before its cursor commits.
    RelayPublishAndDie,
}

impl Model for Protocol {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let mut db = Db {
            next_xid: 1,
            dead_letters: vec![Default::default(); self.messages.len()],
            ..Db::default()
        };
        for (order, &placed) in self.placed.iter().enumerate() {
            let order = order as OrderId;
            let row = placed.then_some(Order {
                status: Status::PendingPayment,
                version: 1,
                paid: 0,
                refund_required: false,
                last_event_pos: 0,
            });
            db.orders.push(OrderSlot {
                committed: row,
                pending: None,
            });
            if placed {
                db.history.push(HistoryRow {
                    order,
                    version: 1,
                    enters: Some(Status::PendingPayment),
                    key_of: None,
                    writer: None,
                });
                db.outbox.push(OutboxRow {
                    id: db.next_id,
                    pos: 0,
                    xid: 0,
                    order: Some(order),
                    version: 1,
                    event: Event::Created,
                    message: None,
                    writer: None,
                });
                db.next_id += 1;
            }
        }
        let mut queue: Vec<Copy> = (0..self.messages.len() as u8)
            .flat_map(|message| {
                (0..self.copies[usize::from(message)]).map(move |_| Copy {
                    message,
                    attempt: 0,
                })
            })
            .collect();
        queue.sort();
        let placed_events = db.next_id;
        vec![State {
            relay: Relay {
                cursor: (0, placed_events.saturating_sub(1)),
                published_to: None,
            },
            published: (0..32).map(|id| u8::from(id < placed_events)).collect(),
            published_version: self.placed.iter().map(|&p| u8::from(p)).collect(),
            db,
            queue,
            workers: vec![None; usize::from(self.workers)],
            rest: vec![Rest::Read; self.rest.len()],
            acked: vec![false; self.messages.len()],
            out_of_order: false,
            consumer_crashes: 0,
            relay_crashes: 0,
        }]
    }

    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        for worker in 0..self.workers {
            match &s.workers[usize::from(worker)] {
                None => {
                    for copies in self.selections(&s.queue) {
                        actions.push(Action::Take { worker, copies });
                    }
                }
                Some(batch) => {
                    match &batch.stage {
                        Stage::SetRead { .. } | Stage::OneByOne { change: None, .. } => {
                            actions.push(Action::Read { worker });
                        }
                        Stage::SetWrite { .. } | Stage::OneByOne { .. } => {
                            if self.blocked_by(s, worker).is_some() {
                                actions.push(Action::GiveUp { worker });
                            } else {
                                actions.push(Action::Write { worker });
                            }
                        }
                        Stage::Commit => {
                            actions.push(Action::Commit { worker });
                            if s.consumer_crashes < self.consumer_crashes {
                                actions.push(Action::CommitAndCrash { worker });
                            }
                        }
                        // Settled in the commit's step.
                        Stage::Settle => {}
                    }
                    if s.consumer_crashes < self.consumer_crashes {
                        actions.push(Action::Crash { worker });
                    }
                }
            }
        }
        for (request, rest) in s.rest.iter().enumerate() {
            let request = request as u8;
            match rest {
                Rest::Read => actions.push(Action::RestRead(request)),
                Rest::Write(_) if !self.rest_blocked(s, request) => {
                    actions.push(Action::RestWrite(request));
                }
                Rest::Write(_) | Rest::Done(_) => {}
            }
        }
        if !self.readable(s).is_empty() {
            actions.push(Action::RelayPublish);
            if s.relay_crashes < self.relay_crashes {
                actions.push(Action::RelayPublishAndDie);
            }
        }
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        Some(self.step(last, &action).0)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always(EFFECT_AT_MOST_ONCE, |_, s| {
                crate::invariants::effect_at_most_once(s)
            }),
            Property::always(ACKNOWLEDGED_WRITE_KEPT, |m, s| {
                crate::invariants::acknowledged_write_kept(m, s)
            }),
            Property::always(PUBLISHED_AT_LEAST_ONCE, |m, s| {
                !m.quiescent(s) || crate::invariants::every_change_published(s)
            }),
            Property::always(PUBLISHED_IN_VERSION_ORDER, |_, s: &State| !s.out_of_order),
            Property::always(KEY_IS_ONE_REQUEST, |_, s| {
                crate::invariants::key_is_one_request(s)
            }),
            // Examples the run must reach, or the model would pass by never getting there.
            Property::sometimes(REACHES_LOST_ROUND, |_, s: &State| {
                s.workers
                    .iter()
                    .flatten()
                    .any(|b| matches!(b.stage, Stage::SetRead { round: 1.., .. }))
            }),
            Property::sometimes(REACHES_FALLBACK, |_, s: &State| {
                s.workers
                    .iter()
                    .flatten()
                    .any(|b| matches!(b.stage, Stage::OneByOne { .. }))
            }),
            Property::sometimes(REACHES_PARKING_AND_REPLAY, |_, s: &State| {
                s.db.dead_letters
                    .contains(&crate::state::DeadLetter::Replayed)
            }),
            Property::sometimes(REACHES_PREMATURE_RETRY, |_, s: &State| {
                s.queue.iter().any(|c| c.attempt > 0)
            }),
            Property::sometimes(REACHES_REPUBLICATION, |_, s: &State| {
                s.published.iter().any(|&n| n > 1)
            }),
            Property::sometimes(REACHES_KEY_REUSE, |_, s: &State| {
                s.rest.contains(&Rest::Done(Answer::KeyReused))
            }),
            Property::sometimes(REACHES_LATE_POSITION, |_, s| {
                crate::invariants::later_version_older_xid(s)
            }),
        ]
    }
}

pub const EFFECT_AT_MOST_ONCE: &str = "each effect at most once";
pub const ACKNOWLEDGED_WRITE_KEPT: &str = "every acknowledged write kept";
pub const PUBLISHED_AT_LEAST_ONCE: &str = "each change published at least once (at quiescence)";
pub const PUBLISHED_IN_VERSION_ORDER: &str = "per-order publication in version order";
pub const KEY_IS_ONE_REQUEST: &str = "a key is one request";
pub const REACHES_LOST_ROUND: &str = "example: a set-based round lost a race";
pub const REACHES_FALLBACK: &str = "example: a batch fell back to one by one";
pub const REACHES_PARKING_AND_REPLAY: &str = "example: a dead letter parked and replayed";
pub const REACHES_PREMATURE_RETRY: &str = "example: a premature message retried";
pub const REACHES_REPUBLICATION: &str = "example: an event published twice";
pub const REACHES_KEY_REUSE: &str = "example: a request refused for its reused key";
pub const REACHES_LATE_POSITION: &str =
    "example: a later version written by a transaction with an older xid";

/// The invariants, each checked in every state the model reaches.
pub const INVARIANTS: [&str; 5] = [
    EFFECT_AT_MOST_ONCE,
    ACKNOWLEDGED_WRITE_KEPT,
    PUBLISHED_AT_LEAST_ONCE,
    PUBLISHED_IN_VERSION_ORDER,
    KEY_IS_ONE_REQUEST,
];
