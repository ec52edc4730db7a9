//! Which acknowledgements settle a set of deliveries on one channel (docs/messaging.md "Batched
//! consumer commits"). A `multiple` ack of tag `t` acknowledges every unacknowledged delivery of
//! the channel up to `t`, so it is sent only up to a tag below which every delivery received is
//! settled; a delivery above a still unsettled one (a message waiting for Postgres, or in a batch
//! still running) is acknowledged on its own. Every tag an ack names is one being settled now,
//! never one acknowledged before (the broker closes the channel on an unknown tag).

use std::collections::BTreeSet;

use lapin::Channel;
use lapin::options::BasicAckOptions;
use tokio::sync::Mutex;

/// One acknowledgement to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ack {
    /// This delivery alone.
    One(u64),
    /// Every delivery up to and including this tag.
    UpTo(u64),
}

/// The deliveries of one channel received and not yet settled.
#[derive(Debug, Default)]
pub(super) struct AckWindow {
    unsettled: BTreeSet<u64>,
}

impl AckWindow {
    /// A delivery was received (tags grow on a channel; each is received before it is settled).
    pub(super) fn received(&mut self, tag: u64) {
        self.unsettled.insert(tag);
    }

    /// `tags` are settled now: the acks that acknowledge exactly them (a `multiple` ack also
    /// sweeps deliveries acknowledged before, which the broker allows).
    pub(super) fn settle(&mut self, tags: &[u64]) -> Vec<Ack> {
        let mut known = Vec::with_capacity(tags.len());
        let mut acks = Vec::new();
        for &tag in tags {
            if self.unsettled.remove(&tag) {
                known.push(tag);
            } else {
                // Never seen by the window: acknowledging it on its own is all that is safe.
                acks.push(Ack::One(tag));
            }
        }
        known.sort_unstable();
        let floor = self.unsettled.first().copied().unwrap_or(u64::MAX);
        let below = known.partition_point(|&tag| tag < floor);
        match known[..below] {
            [] => {}
            [tag] => acks.push(Ack::One(tag)),
            [.., highest] => acks.push(Ack::UpTo(highest)),
        }
        acks.extend(known[below..].iter().map(|&tag| Ack::One(tag)));
        acks
    }
}

/// A consuming channel with its window: acks are computed and sent under one lock, so that a
/// `multiple` ack never overtakes a single ack it covers (which would then name an unknown tag).
pub(super) struct Acknowledger {
    channel: Channel,
    window: Mutex<AckWindow>,
}

impl Acknowledger {
    pub(super) fn new(channel: Channel) -> Self {
        Self {
            channel,
            window: Mutex::new(AckWindow::default()),
        }
    }

    pub(super) async fn received(&self, tag: u64) {
        self.window.lock().await.received(tag);
    }

    /// Acknowledges the deliveries of `tags`, all at once when they are the lowest unsettled.
    pub(super) async fn ack(&self, tags: &[u64]) -> Result<(), lapin::Error> {
        let mut window = self.window.lock().await;
        for ack in window.settle(tags) {
            let (tag, multiple) = match ack {
                Ack::One(tag) => (tag, false),
                Ack::UpTo(tag) => (tag, true),
            };
            self.channel
                .basic_ack(tag, BasicAckOptions { multiple })
                .await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Ack::{One, UpTo};
    use super::*;

    /// Receives the deliveries `1..=received`, then settles each batch of `steps` in turn and
    /// checks the acks it sends.
    fn assert_settles(received: u64, steps: &[(&[u64], &[Ack])]) {
        let mut window = AckWindow::default();
        for tag in 1..=received {
            window.received(tag);
        }
        for (batch, acks) in steps {
            assert_eq!(window.settle(batch), *acks, "settling {batch:?}");
        }
    }

    #[test]
    fn one_delivery_at_a_time_is_acknowledged_on_its_own_as_without_batches() {
        assert_settles(
            4,
            &[
                (&[1], &[One(1)]),
                (&[2], &[One(2)]),
                (&[4], &[One(4)]),
                (&[3], &[One(3)]),
            ],
        );
    }

    #[test]
    fn a_batch_of_the_lowest_unsettled_deliveries_is_one_multiple_ack_of_its_highest() {
        assert_settles(
            8,
            &[(&[3, 1, 4, 2], &[UpTo(4)]), (&[5, 6, 7, 8], &[UpTo(8)])],
        );
    }

    #[test]
    fn a_batch_above_an_unsettled_delivery_is_acknowledged_one_by_one() {
        assert_settles(
            8,
            &[
                (&[5, 6, 7, 8], &[One(5), One(6), One(7), One(8)]),
                // The earlier batch finishing later sweeps up to its own highest only.
                (&[1, 2, 3, 4], &[UpTo(4)]),
            ],
        );
    }

    #[test]
    fn a_waiting_delivery_splits_its_batch_at_itself() {
        assert_settles(
            5,
            &[
                // 3 waits for Postgres: 1 and 2 go together, 4 and 5 on their own.
                (&[1, 2, 4, 5], &[UpTo(2), One(4), One(5)]),
                // Once 3 is settled, its ack names only itself.
                (&[3], &[One(3)]),
            ],
        );
    }

    #[test]
    fn a_multiple_ack_may_sweep_deliveries_acknowledged_before_but_names_a_new_one() {
        assert_settles(
            4,
            &[(&[2], &[One(2)]), (&[1, 3], &[UpTo(3)]), (&[4], &[One(4)])],
        );
    }

    #[test]
    fn later_deliveries_do_not_hold_back_a_batch_below_them() {
        assert_settles(6, &[(&[1, 2, 3, 4], &[UpTo(4)])]);
    }

    #[test]
    fn a_tag_the_window_never_received_is_acknowledged_on_its_own() {
        assert_settles(2, &[(&[1, 2, 9], &[One(9), UpTo(2)])]);
    }

    #[test]
    fn nothing_to_settle_sends_nothing() {
        assert_settles(2, &[(&[], &[])]);
    }
}
