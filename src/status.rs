//! The answer statuses an attempt can end with (gRPC's canonical codes that
//! matter for retries).

use serde::{Deserialize, Serialize};
use std::fmt;

/// How one attempt ended, as its client sees it.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Success.
    Ok,
    /// The backend could not serve the attempt (the default rejection and
    /// outage status); retried by default.
    #[default]
    Unavailable,
    /// The backend is overloaded or throttling; retried by default.
    ResourceExhausted,
    /// The attempt timed out at the client; retried by default.
    DeadlineExceeded,
    /// A write conflicted with another one (optimistic concurrency).
    Aborted,
    /// A server-side error (the default error-burst status).
    Internal,
    /// The request itself is invalid; retrying cannot help.
    InvalidArgument,
    /// The caller lacks valid credentials.
    Unauthenticated,
    /// The caller may not perform the request.
    PermissionDenied,
}

impl Status {
    /// Every status, in declaration order.
    pub const ALL: [Status; 9] = [
        Status::Ok,
        Status::Unavailable,
        Status::ResourceExhausted,
        Status::DeadlineExceeded,
        Status::Aborted,
        Status::Internal,
        Status::InvalidArgument,
        Status::Unauthenticated,
        Status::PermissionDenied,
    ];

    /// The name used in scenario files (`"resource_exhausted"`).
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Unavailable => "unavailable",
            Status::ResourceExhausted => "resource_exhausted",
            Status::DeadlineExceeded => "deadline_exceeded",
            Status::Aborted => "aborted",
            Status::Internal => "internal",
            Status::InvalidArgument => "invalid_argument",
            Status::Unauthenticated => "unauthenticated",
            Status::PermissionDenied => "permission_denied",
        }
    }

    /// Parses a scenario-file name or a gRPC code name (`"UNAVAILABLE"`),
    /// case-insensitively.
    pub fn parse(text: &str) -> Option<Status> {
        let lower = text.trim().to_ascii_lowercase().replace('-', "_");
        Status::ALL.into_iter().find(|s| s.name() == lower)
    }

    /// The small integer used to store a status compactly (index in `ALL`).
    pub fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of statuses (a policy's `retry_on`), as a bit mask.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct StatusSet(u16);

impl StatusSet {
    /// The empty set.
    pub const EMPTY: StatusSet = StatusSet(0);

    /// The set holding exactly these statuses.
    pub fn of(statuses: &[Status]) -> StatusSet {
        StatusSet(statuses.iter().fold(0, |m, s| m | (1 << s.index())))
    }

    /// The default `retry_on` (`docs/scenario-reference.md`).
    pub fn default_retry_on() -> StatusSet {
        StatusSet::of(&[
            Status::Unavailable,
            Status::ResourceExhausted,
            Status::DeadlineExceeded,
        ])
    }

    /// Whether `s` is in the set.
    pub fn contains(self, s: Status) -> bool {
        self.0 & (1 << s.index()) != 0
    }

    /// The statuses in the set, in declaration order.
    pub fn to_vec(self) -> Vec<Status> {
        Status::ALL
            .into_iter()
            .filter(|s| self.contains(*s))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for s in Status::ALL {
            assert_eq!(Status::parse(s.name()), Some(s));
            assert_eq!(Status::ALL[s.index()], s);
        }
        assert_eq!(Status::parse("UNAVAILABLE"), Some(Status::Unavailable));
        assert_eq!(Status::parse("bogus"), None);
    }

    #[test]
    fn sets_hold_what_was_put_in() {
        let set = StatusSet::default_retry_on();
        assert!(set.contains(Status::Unavailable));
        assert!(!set.contains(Status::Ok));
        assert_eq!(set.to_vec().len(), 3);
        assert_eq!(StatusSet::EMPTY.to_vec(), vec![]);
    }
}
