//! The REST caller: one client sending requests under one Idempotency-Key, each in autocommit
//! (`src/app/runner.rs`): a read of the key in both tables with the state (`src/store/keys.rs`,
//! `keyed_cte!`), then one guarded write that is its own transaction — an order command's
//! (`src/store/order_changes.rs`, `write`) or a dead-letter replay's
//! (`src/store/dead_letter_actions.rs`). A write that fails reads again, and the key decides.

use crate::domain::{Command, Decided, Event, decide};
use crate::protocol::{Protocol, RestRequest};
use crate::state::{Answer, DeadLetter, OutboxRow, Rest, State};
use crate::statement::{Written, blocker, write_order};

impl Protocol {
    pub(crate) fn rest_read(&self, s: &mut State, request: u8) -> String {
        let db = &s.db;
        let holder = db
            .history
            .iter()
            .filter(|row| row.writer.is_none())
            .find_map(|row| row.key_of)
            .or_else(|| db.key_actions.first().copied());
        let next = match (holder, self.rest[usize::from(request)]) {
            // The key's own request again: a replay of its answer.
            (Some(holder), _) if holder == request => Rest::Done(Answer::AlreadyApplied),
            (Some(_), _) => Rest::Done(Answer::KeyReused),
            (None, RestRequest::Cancel(order)) => {
                match decide(Command::Cancel(order), db.order(order, None), None) {
                    Decided::Write(change) => Rest::Write(Some(change)),
                    Decided::AlreadyApplied => Rest::Done(Answer::AlreadyApplied),
                    Decided::Refused { .. } | Decided::NotFound => Rest::Done(Answer::Refused),
                }
            }
            (None, RestRequest::ReplayDeadLetter(message)) => {
                match db.dead_letters[usize::from(message)] {
                    DeadLetter::Parked => Rest::Write(None),
                    DeadLetter::None | DeadLetter::Replayed => Rest::Done(Answer::Refused),
                }
            }
        };
        let note = format!(
            "REST r{request} {:?} reads: {next:?}",
            self.rest[usize::from(request)]
        );
        s.rest[usize::from(request)] = next;
        note
    }

    /// Whether the request's write waits for a consumer's transaction.
    pub(crate) fn rest_blocked(&self, s: &State, request: u8) -> bool {
        match (
            &s.rest[usize::from(request)],
            self.rest[usize::from(request)],
        ) {
            (Rest::Write(Some(change)), RestRequest::Cancel(order)) => blocker(
                &s.db,
                self.variant,
                order,
                std::slice::from_ref(change),
                None,
            )
            .is_some(),
            _ => false,
        }
    }

    pub(crate) fn rest_write(&self, s: &mut State, request: u8) -> String {
        let xid = s.db.next_xid;
        s.db.next_xid += 1;
        let done = match (
            s.rest[usize::from(request)].clone(),
            self.rest[usize::from(request)],
        ) {
            (Rest::Write(Some(change)), RestRequest::Cancel(order)) => write_order(
                &mut s.db,
                self.variant,
                None,
                xid,
                order,
                &[change],
                Some(request),
            ),
            (Rest::Write(None), RestRequest::ReplayDeadLetter(message)) => {
                self.replay(s, request, message, xid)
            }
            _ => return String::new(),
        };
        s.rest[usize::from(request)] = match done {
            Written::Applied => Rest::Done(Answer::Applied),
            Written::GuardMissed | Written::Refused(_) => Rest::Read,
        };
        format!(
            "REST r{request} {:?} writes (xid {xid}): {done:?}",
            self.rest[usize::from(request)]
        )
    }

    /// The replay's one statement: the dead letter still parked, its action row holding the key
    /// (with the trigger's look into the history), and the message back into the outbox.
    fn replay(&self, s: &mut State, request: u8, message: u8, xid: u8) -> Written {
        let db = &mut s.db;
        if db.dead_letters[usize::from(message)] != DeadLetter::Parked {
            return Written::GuardMissed;
        }
        if !db.key_actions.is_empty() {
            return Written::Refused("dead_letter_actions_idempotency_key");
        }
        if self.variant.key_across_tables() && db.history.iter().any(|r| r.key_of.is_some()) {
            return Written::Refused("idempotency_key_held_elsewhere");
        }
        db.dead_letters[usize::from(message)] = DeadLetter::Replayed;
        db.key_actions.push(request);
        db.outbox.push(OutboxRow {
            id: db.next_id,
            pos: xid,
            xid,
            order: None,
            version: 0,
            event: Event::Replay,
            message: Some(message),
            writer: None,
        });
        db.next_id += 1;
        db.sort();
        Written::Applied
    }
}
