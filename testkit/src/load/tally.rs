//! What the load counts as it runs (messages confirmed, resent and duplicated, requests, retries
//! and server errors), and when each request was acknowledged: from which the windows of
//! unavailability a fault caused are read.

use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64};
use std::time::{Duration, Instant};

/// The load's counts, shared by its publisher and its REST clients.
#[derive(Default)]
pub struct Tally {
    /// Messages the broker confirmed (duplicates included; a batch sent again counts again).
    pub published: AtomicU64,
    /// Of those, copies sent on purpose: the same message again, or the same payment anew.
    pub duplicates: AtomicU64,
    /// Messages sent again because their batch was not confirmed (their node died).
    pub resent: AtomicU64,
    pub publisher_reconnects: AtomicU64,
    pub requests: AtomicU64,
    pub retried_requests: AtomicU64,
    /// Answers 500: never expected, even while nodes die.
    pub server_errors: AtomicU64,
    /// Answers 503 (retried): the service said it could not take the request now.
    pub unavailable: AtomicU64,
    /// Requests that got no answer (retried): refused or dropped connections.
    pub connection_failures: AtomicU64,
    pub requests_in_flight: AtomicI64,
    /// Every request answered with a success: when it was sent and when the answer came.
    pub acknowledged: Mutex<Vec<(Instant, Instant)>>,
}

impl Tally {
    /// From `fault` to the first success of a request sent after it (`None`: none yet).
    pub fn unavailable_after(&self, fault: Instant) -> Option<Duration> {
        self.acknowledged
            .lock()
            .expect("acknowledged")
            .iter()
            .filter(|(sent, _)| *sent >= fault)
            .map(|(_, answered)| *answered - fault)
            .min()
    }

    /// The longest time between `from` and `to` in which no request was acknowledged: how long
    /// writes were unavailable, as clients saw it, when the fault is not one instant (a
    /// switchover asked at `from` takes its time to begin).
    pub fn longest_silence(&self, from: Instant, to: Instant) -> Duration {
        let mut answered: Vec<Instant> = self
            .acknowledged
            .lock()
            .expect("acknowledged")
            .iter()
            .map(|(_, answered)| *answered)
            .filter(|answered| (from..=to).contains(answered))
            .collect();
        answered.sort();
        let mut last = from;
        let mut longest = Duration::ZERO;
        for at in answered.into_iter().chain(std::iter::once(to)) {
            longest = longest.max(at - last);
            last = at;
        }
        longest
    }
}
