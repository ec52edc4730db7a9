//! The outbox relay as a log reader (the design the relay is moving to): one relay at a time,
//! under its lease, reads the committed rows past its cursor and below the horizon —
//! `(pos, id) > cursor AND pos < pg_snapshot_xmin(pg_current_snapshot())` — in `(pos, id)` order,
//! publishes them with confirms, then commits the new cursor in one short transaction. A relay
//! that dies between the confirms and that commit publishes the same rows again.

use crate::protocol::Protocol;
use crate::state::{Copy, OutboxRow, State};

impl Protocol {
    /// The rows the relay reads now, in the order it publishes them.
    pub(crate) fn readable<'s>(&self, s: &'s State) -> Vec<&'s OutboxRow> {
        let xmin = s.xmin();
        let mut rows: Vec<&OutboxRow> =
            s.db.outbox
                .iter()
                .filter(|row| row.writer.is_none() && (row.pos, row.id) > s.relay.cursor)
                .filter(|row| self.variant.ignores_horizon() || row.pos < xmin)
                .collect();
        rows.sort_by_key(|row| (row.pos, row.id));
        rows
    }

    pub(crate) fn publish(&self, s: &mut State) -> String {
        let rows: Vec<OutboxRow> = self.readable(s).into_iter().cloned().collect();
        let mut notes = Vec::new();
        for row in &rows {
            let id = usize::from(row.id);
            if s.published[id] == 0
                && let Some(order) = row.order
            {
                let highest = &mut s.published_version[usize::from(order)];
                if row.version < *highest {
                    s.out_of_order = true;
                }
                *highest = (*highest).max(row.version);
            }
            s.published[id] = (s.published[id] + 1).min(2);
            if let Some(message) = row.message {
                s.queue.push(Copy {
                    message,
                    attempt: 0,
                });
            }
            notes.push(match row.order {
                Some(order) => format!(
                    "{} v{} {:?} (pos {}, id {})",
                    char::from(b'A' + order),
                    row.version,
                    row.event,
                    row.pos,
                    row.id
                ),
                None => format!(
                    "replay of m{:?} (pos {}, id {})",
                    row.message, row.pos, row.id
                ),
            });
        }
        s.queue.sort();
        s.relay.published_to = rows.last().map(|row| (row.pos, row.id));
        format!("relay (xmin {}) publishes {}", s.xmin(), notes.join(", "))
    }

    pub(crate) fn commit_cursor(&self, s: &mut State) -> String {
        if let Some(to) = s.relay.published_to.take() {
            s.relay.cursor = to;
        }
        format!("relay commits its cursor at {:?}", s.relay.cursor)
    }

    pub(crate) fn relay_crash(&self, s: &mut State) -> String {
        s.relay.published_to = None;
        s.relay_crashes += 1;
        "relay dies after the confirms, before its cursor commits".to_owned()
    }
}
