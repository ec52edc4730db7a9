//! How a command ended when it did not fail.

/// Every successful command says whether it wrote something. Both doors match exhaustively.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome<T> {
    /// This call made the change.
    Applied(T),
    /// The change already existed (same order, transfer, shipment or cancellation): nothing
    /// was written. `T` is the current state.
    AlreadyApplied(T),
    /// The request's Idempotency-Key already holds a committed change with the same fingerprint:
    /// nothing was written. `T` is the current state of what that change touched.
    Replayed(T),
}

impl<T> Outcome<T> {
    pub fn value(&self) -> &T {
        match self {
            Outcome::Applied(v) | Outcome::AlreadyApplied(v) | Outcome::Replayed(v) => v,
        }
    }

    pub fn into_value(self) -> T {
        match self {
            Outcome::Applied(v) | Outcome::AlreadyApplied(v) | Outcome::Replayed(v) => v,
        }
    }

    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Outcome<U> {
        match self {
            Outcome::Applied(v) => Outcome::Applied(f(v)),
            Outcome::AlreadyApplied(v) => Outcome::AlreadyApplied(f(v)),
            Outcome::Replayed(v) => Outcome::Replayed(f(v)),
        }
    }

    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Applied(_) => "applied",
            Outcome::AlreadyApplied(_) => "already_applied",
            Outcome::Replayed(_) => "replayed",
        }
    }
}
