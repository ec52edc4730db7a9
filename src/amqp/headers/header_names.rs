//! The names of the headers the service writes (the retry path's) or reads (the broker's), and
//! which of them are bookkeeping: where a message has been rather than what it is.

/// How many times a message has been delivered through the retry path.
pub const ATTEMPT_HEADER: &str = "x-attempt";
/// The service's seal on [`ATTEMPT_HEADER`]: without it the count is not read.
pub const ATTEMPT_SEAL_HEADER: &str = "x-attempt-seal";
/// Why a message was dead-lettered (or last retried).
pub const REASON_HEADER: &str = "x-error-reason";
/// The routing key the message first arrived with.
pub const ORIGINAL_ROUTING_KEY_HEADER: &str = "x-original-routing-key";
/// How many bytes of the original's headers a retry or dead letter left out.
pub use crate::domain::HEADERS_DROPPED_HEADER;
/// The broker's record of each time a message died (RabbitMQ), most recent first.
pub(in crate::amqp) const DEATH_HEADER: &str = "x-death";
/// A quorum queue's count of a message's failed deliveries (RabbitMQ adds it).
pub(in crate::amqp) const DELIVERY_COUNT_HEADER: &str = "x-delivery-count";

/// Headers that say where a message has been rather than what it is: the service's own (the
/// retry path's) and the broker's. Neither a retry, a dead letter nor a parked dead letter
/// repeats what the original carried of them: the service writes its own afresh, and a
/// publisher's forged `x-death` must not reach the dead-letter queue as if the broker wrote it.
pub(in crate::amqp) const BOOKKEEPING_HEADERS: [&str; 13] = [
    REASON_HEADER,
    ATTEMPT_HEADER,
    ATTEMPT_SEAL_HEADER,
    ORIGINAL_ROUTING_KEY_HEADER,
    HEADERS_DROPPED_HEADER,
    DEATH_HEADER,
    DELIVERY_COUNT_HEADER,
    "x-first-death-exchange",
    "x-first-death-queue",
    "x-first-death-reason",
    "x-last-death-exchange",
    "x-last-death-queue",
    "x-last-death-reason",
];
