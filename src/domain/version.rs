//! An order's version: 1 at creation, +1 on every change. It guards every write (the update
//! names the version it read), is the `ETag` clients send back in `If-Match`, and numbers the
//! history rows.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Version(i64);

impl Version {
    /// The version of a newly placed order.
    pub const FIRST: Version = Version(1);

    /// A stored or client-sent version; versions start at 1.
    pub fn new(value: i64) -> Option<Self> {
        (value >= 1).then_some(Self(value))
    }

    /// The version a change produces.
    pub fn next(self) -> Self {
        Self(self.0 + 1)
    }

    pub fn get(self) -> i64 {
        self.0
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The versions a conditional change may apply to: what an `If-Match` asks (docs/contract.md,
/// "Conditional requests").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionMatch {
    /// Unconditional, or `If-Match: *`: whatever version the order is at.
    Any,
    /// Only these versions. Empty when the client named only tags that never match (weak ones,
    /// or ones no order carries), so no version is admitted.
    OneOf(Vec<Version>),
}

impl VersionMatch {
    /// Whether an order at `version` meets the condition.
    pub fn admits(&self, version: Version) -> bool {
        match self {
            VersionMatch::Any => true,
            VersionMatch::OneOf(versions) => versions.contains(&version),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_start_at_one_and_count_up() {
        assert_eq!(Version::new(1), Some(Version::FIRST));
        assert_eq!(Version::new(0), None);
        assert_eq!(Version::new(-3), None);
        assert_eq!(Version::FIRST.next().get(), 2);
    }

    #[test]
    fn a_condition_admits_any_version_or_only_those_it_names() {
        let two = Version::FIRST.next();
        assert!(VersionMatch::Any.admits(two));
        assert!(VersionMatch::OneOf(vec![Version::FIRST, two]).admits(two));
        assert!(!VersionMatch::OneOf(vec![Version::FIRST]).admits(two));
        assert!(!VersionMatch::OneOf(vec![]).admits(Version::FIRST));
    }
}
