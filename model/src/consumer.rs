//! The inbox consumers: a batch of deliveries in one transaction (`src/app/batch/`), set-based in
//! rounds of one read and one write statement, falling back to one by one under savepoints, then
//! settled after the commit (`src/amqp/inbox/worker.rs`, `disposition.rs`, `settlement.rs`). Each
//! function is one step of the checker and returns what it did, for a counterexample's trace.

use crate::domain::{Change, Command, Decided, OrderId, decide};
use crate::protocol::Protocol;
use crate::state::{Batch, Copy, DeadLetter, End, ItemDecision, OrderWrite, Stage, State, Txn};
use crate::statement::{Written, blocker, write_order};

impl Protocol {
    /// The copies a worker may take together from `queue`: every selection of one up to
    /// `batch_size` deliveries; two of one order in both orders, since their order decides.
    pub(crate) fn selections(&self, queue: &[Copy]) -> Vec<Vec<Copy>> {
        let mut out: Vec<Vec<Copy>> = Vec::new();
        for (i, &first) in queue.iter().enumerate() {
            out.push(vec![first]);
            if self.batch_size < 2 {
                continue;
            }
            for &second in &queue[i + 1..] {
                out.push(vec![first, second]);
                if self.order_of(first) == self.order_of(second) && first != second {
                    out.push(vec![second, first]);
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }

    /// The command of the batch's item `item`.
    fn item_command(&self, batch: &Batch, item: u8) -> Command {
        self.messages[usize::from(batch.copies[usize::from(item)].message)]
    }

    fn order_of(&self, copy: Copy) -> OrderId {
        self.messages[usize::from(copy.message)].order()
    }

    /// The indexes of `copies` in the order of their order ids, one order's as they came.
    fn in_order_of_orders(&self, copies: &[Copy]) -> Vec<u8> {
        let mut items: Vec<u8> = (0..copies.len() as u8).collect();
        items.sort_by_key(|&i| self.order_of(copies[usize::from(i)]));
        items
    }

    pub(crate) fn take(&self, s: &mut State, worker: Txn, copies: Vec<Copy>) -> String {
        for copy in &copies {
            if let Some(at) = s.queue.iter().position(|c| c == copy) {
                s.queue.remove(at);
            }
        }
        let remaining = self.in_order_of_orders(&copies);
        let note = format!("W{worker} takes {}", self.describe_copies(&copies));
        s.workers[usize::from(worker)] = Some(Batch {
            ended: vec![None; copies.len()],
            copies,
            xid: None,
            stage: Stage::SetRead {
                round: 0,
                remaining,
            },
        });
        note
    }

    /// A set-based round's read and decisions, or a one-by-one item's read and decision.
    pub(crate) fn read(&self, s: &mut State, worker: Txn) -> String {
        let Some(mut batch) = s.workers[usize::from(worker)].take() else {
            return String::new();
        };
        let note = match batch.stage.clone() {
            Stage::SetRead { round, remaining } => {
                self.set_read(s, worker, &mut batch, round, &remaining)
            }
            Stage::OneByOne {
                order, at, lost, ..
            } => {
                let item = order[usize::from(at)];
                let command = self.item_command(&batch, item);
                let found = s.db.order(command.order(), Some(worker));
                let entry = command.transfer().and_then(|t| s.db.entry(t, Some(worker)));
                let decided = decide(command, found, entry);
                let note = format!("W{worker} savepoint reads for {command:?}: {decided:?}");
                match decided {
                    Decided::Write(change) => {
                        batch.stage = Stage::OneByOne {
                            order,
                            at,
                            lost,
                            change: Some(change),
                        };
                    }
                    other => {
                        batch.ended[usize::from(item)] = End::of(&other);
                        batch.stage = next_item(order, at);
                    }
                }
                note
            }
            Stage::SetWrite { .. } | Stage::Commit | Stage::Settle => String::new(),
        };
        s.workers[usize::from(worker)] = Some(batch);
        note
    }

    fn set_read(
        &self,
        s: &State,
        worker: Txn,
        batch: &mut Batch,
        round: u8,
        remaining: &[u8],
    ) -> String {
        let orders = s.db.orders.len();
        let mut in_batch: Vec<Option<crate::domain::Order>> = vec![None; orders];
        let mut entries: Vec<(u8, OrderId)> = Vec::new();
        let mut decisions = Vec::new();
        let mut writes: Vec<OrderWrite> = Vec::new();
        for &item in remaining {
            let command = self.item_command(batch, item);
            let id = command.order();
            let mut depends_on = Vec::new();
            let mut found = s.db.order(id, Some(worker));
            if let Some(order) = in_batch[usize::from(id)] {
                found = Some(order);
                depends_on.push(id);
            }
            let mut entry = command.transfer().and_then(|t| s.db.entry(t, Some(worker)));
            if let Some(&(_, recorded_for)) = command
                .transfer()
                .and_then(|t| entries.iter().find(|(e, _)| *e == t))
            {
                entry = Some(recorded_for);
                depends_on.push(recorded_for);
            }
            let decided = decide(command, found, entry);
            if let Decided::Write(change) = &decided {
                in_batch[usize::from(id)] = Some(change.next);
                if let Some(t) = change.transfer {
                    entries.push((t, id));
                }
                match writes.last_mut() {
                    Some(write) if write.order == id => write.changes.push((item, change.clone())),
                    _ => writes.push(OrderWrite {
                        order: id,
                        changes: vec![(item, change.clone())],
                    }),
                }
            }
            decisions.push(ItemDecision {
                item,
                decided,
                depends_on,
            });
        }
        let note = format!(
            "W{worker} round {round} reads and decides: {}",
            decisions
                .iter()
                .map(|d| format!(
                    "{:?} → {}",
                    self.item_command(batch, d.item),
                    short(&d.decided)
                ))
                .collect::<Vec<_>>()
                .join("; ")
        );
        batch.stage = Stage::SetWrite {
            round,
            decisions,
            writes,
            at: 0,
            written: Vec::new(),
        };
        if let Stage::SetWrite { writes, .. } = &batch.stage
            && writes.is_empty()
        {
            self.resolve_round(batch);
        }
        note
    }

    /// The change(s) the batch's next write step writes, and their order.
    pub(crate) fn next_write(&self, batch: &Batch) -> Option<(OrderId, Vec<Change>)> {
        match &batch.stage {
            Stage::SetWrite { writes, at, .. } => writes
                .get(usize::from(*at))
                .map(|w| (w.order, w.changes.iter().map(|(_, c)| c.clone()).collect())),
            Stage::OneByOne {
                order,
                at,
                change: Some(change),
                ..
            } => {
                let item = order[usize::from(*at)];
                Some((self.item_command(batch, item).order(), vec![change.clone()]))
            }
            _ => None,
        }
    }

    /// Who the batch's next write waits for, if anyone.
    pub(crate) fn blocked_by(&self, s: &State, worker: Txn) -> Option<Txn> {
        let batch = s.workers[usize::from(worker)].as_ref()?;
        let (order, changes) = self.next_write(batch)?;
        blocker(&s.db, self.variant, order, &changes, Some(worker))
    }

    /// One order's part of a set-based write statement, or a one-by-one item's write. The
    /// transaction takes its xid at its first write.
    pub(crate) fn write(&self, s: &mut State, worker: Txn) -> String {
        let Some(mut batch) = s.workers[usize::from(worker)].take() else {
            return String::new();
        };
        let Some((order, changes)) = self.next_write(&batch) else {
            return String::new();
        };
        let xid = *batch.xid.get_or_insert_with(|| {
            s.db.next_xid += 1;
            s.db.next_xid - 1
        });
        let done = write_order(
            &mut s.db,
            self.variant,
            Some(worker),
            xid,
            order,
            &changes,
            None,
        );
        let name = char::from(b'A' + order);
        let note = format!("W{worker} (xid {xid}) writes order {name}: {done:?}");
        match (&mut batch.stage, done) {
            (Stage::SetWrite { at, written, .. }, Written::Applied) => {
                written.push(order);
                *at += 1;
                self.after_row(&mut batch);
            }
            (Stage::SetWrite { at, .. }, Written::GuardMissed) => {
                *at += 1;
                self.after_row(&mut batch);
            }
            (Stage::SetWrite { .. }, Written::Refused(_)) => self.fall_back(s, worker, &mut batch),
            (Stage::OneByOne { order, at, .. }, Written::Applied) => {
                batch.ended[usize::from(order[usize::from(*at)])] = Some(End::Ack);
                batch.stage = next_item(order.clone(), *at);
            }
            (Stage::OneByOne { .. }, Written::GuardMissed | Written::Refused(_)) => {
                self.lost_in_savepoint(&mut batch);
            }
            _ => {}
        }
        s.workers[usize::from(worker)] = Some(batch);
        note
    }

    /// A lock wait given up (a lock timeout in a batch, or a deadlock's victim): a set-based
    /// statement fails and the batch goes one by one; a savepoint's item is set aside.
    pub(crate) fn give_up(&self, s: &mut State, worker: Txn) -> String {
        let Some(mut batch) = s.workers[usize::from(worker)].take() else {
            return String::new();
        };
        let note = match &batch.stage {
            Stage::SetWrite { .. } => {
                self.fall_back(s, worker, &mut batch);
                format!("W{worker} gives up a lock wait: the batch's statement fails; one by one")
            }
            Stage::OneByOne { order, at, .. } => {
                batch.ended[usize::from(order[usize::from(*at)])] = Some(End::SetAside);
                batch.stage = next_item(order.clone(), *at);
                format!("W{worker} gives up a lock wait: the item is set aside")
            }
            _ => String::new(),
        };
        s.workers[usize::from(worker)] = Some(batch);
        note
    }

    fn fall_back(&self, s: &mut State, worker: Txn, batch: &mut Batch) {
        s.db.abort(worker);
        batch.xid = None;
        batch.ended = vec![None; batch.copies.len()];
        batch.stage = Stage::OneByOne {
            order: self.in_order_of_orders(&batch.copies),
            at: 0,
            lost: 0,
            change: None,
        };
    }

    fn lost_in_savepoint(&self, batch: &mut Batch) {
        if let Stage::OneByOne {
            order, at, lost, ..
        } = &batch.stage
        {
            let (order, at, lost) = (order.clone(), *at, *lost + 1);
            if lost < self.rounds {
                batch.stage = Stage::OneByOne {
                    order,
                    at,
                    lost,
                    change: None,
                };
            } else {
                batch.ended[usize::from(order[usize::from(at)])] = Some(End::SetAside);
                batch.stage = next_item(order, at);
            }
        }
    }

    fn after_row(&self, batch: &mut Batch) {
        if let Stage::SetWrite { writes, at, .. } = &batch.stage
            && usize::from(*at) == writes.len()
        {
            self.resolve_round(batch);
        }
    }

    /// After a round's write: settle each item whose outcome stands; decide the others again
    /// in another round, or set them aside after the last.
    fn resolve_round(&self, batch: &mut Batch) {
        let Stage::SetWrite {
            round,
            decisions,
            written,
            ..
        } = batch.stage.clone()
        else {
            return;
        };
        let mut again = Vec::new();
        for d in decisions {
            let stands = d.depends_on.iter().all(|o| written.contains(o));
            let end = match (&d.decided, stands) {
                (_, false) => None,
                (Decided::Write(_), true) => written
                    .contains(&self.item_command(batch, d.item).order())
                    .then_some(End::Ack),
                (other, true) => End::of(other),
            };
            match end {
                Some(end) => batch.ended[usize::from(d.item)] = Some(end),
                None => again.push(d.item),
            }
        }
        batch.stage = if again.is_empty() {
            Stage::Commit
        } else if round + 1 < self.rounds {
            Stage::SetRead {
                round: round + 1,
                remaining: again,
            }
        } else {
            for item in again {
                batch.ended[usize::from(item)] = Some(End::SetAside);
            }
            Stage::Commit
        };
    }

    pub(crate) fn commit(&self, s: &mut State, worker: Txn) -> String {
        s.db.commit(worker);
        if let Some(batch) = s.workers[usize::from(worker)].as_mut() {
            batch.stage = Stage::Settle;
            return format!("W{worker} commits (xid {:?})", batch.xid);
        }
        String::new()
    }

    /// Replacements published and confirmed, then the originals acknowledged.
    pub(crate) fn settle(&self, s: &mut State, worker: Txn) -> String {
        let Some(batch) = s.workers[usize::from(worker)].take() else {
            return String::new();
        };
        let mut notes = Vec::new();
        for (copy, end) in batch.copies.iter().zip(&batch.ended) {
            let message = usize::from(copy.message);
            let end = end.unwrap_or(End::SetAside);
            notes.push(format!("m{message} {end:?}"));
            match end {
                End::Ack => s.acked[message] = true,
                End::Retry if copy.attempt + 1 < self.max_attempts => s.queue.push(Copy {
                    attempt: copy.attempt + 1,
                    ..*copy
                }),
                End::Retry | End::DeadLetter => s.db.dead_letters[message] = DeadLetter::Parked,
                End::SetAside => s.queue.push(*copy),
            }
        }
        s.queue.sort();
        format!("W{worker} settles: {}", notes.join(", "))
    }

    /// The worker dies: a transaction still open is rolled back; every delivery it held is
    /// redelivered.
    pub(crate) fn crash(&self, s: &mut State, worker: Txn) -> String {
        let Some(batch) = s.workers[usize::from(worker)].take() else {
            return String::new();
        };
        let committed = matches!(batch.stage, Stage::Settle);
        if !committed {
            s.db.abort(worker);
        }
        s.queue.extend(batch.copies.iter().copied());
        s.queue.sort();
        s.consumer_crashes += 1;
        format!(
            "W{worker} crashes {} the commit; its deliveries come back",
            if committed { "after" } else { "before" }
        )
    }

    pub(crate) fn describe_copies(&self, copies: &[Copy]) -> String {
        copies
            .iter()
            .map(|c| {
                format!(
                    "m{} {:?} (attempt {})",
                    c.message,
                    self.messages[usize::from(c.message)],
                    c.attempt
                )
            })
            .collect::<Vec<_>>()
            .join(" + ")
    }
}

/// The stage after a one-by-one item ended.
fn next_item(order: Vec<u8>, at: u8) -> Stage {
    if usize::from(at) + 1 == order.len() {
        Stage::Commit
    } else {
        Stage::OneByOne {
            order,
            at: at + 1,
            lost: 0,
            change: None,
        }
    }
}

fn short(decided: &Decided) -> String {
    match decided {
        Decided::Write(change) => {
            format!("write v{} {:?}", change.next.version, change.next.status)
        }
        other => format!("{other:?}"),
    }
}
