//! One request's story, as `run --trace N` records it: the marks of a few
//! chosen top-level requests of one run (attempts sent and answered,
//! backoffs, the end), for the trace writer (`report::perfetto`). The
//! recording itself is `model::story`.

use crate::time::Nanos;

/// Why a request was chosen for the trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Pick {
    /// Among the slowest to end (start to end, ties to the lower id).
    Slowest,
    /// Among the first to be given up.
    GaveUp,
    /// By a fixed-seed sample of request ids.
    Sample,
}

impl Pick {
    /// The reason in words.
    pub fn name(self) -> &'static str {
        match self {
            Pick::Slowest => "slowest",
            Pick::GaveUp => "gave up",
            Pick::Sample => "sample",
        }
    }
}

/// One thing that happened to a traced request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mark {
    /// An attempt left the client (`hedge`: while another was out).
    Sent {
        /// When.
        at: Nanos,
        /// The attempt's number (1 = the first).
        attempt: u32,
        /// A hedge: sent while an earlier attempt was still out.
        hedge: bool,
    },
    /// An attempt's answer reached the client, or it timed out.
    Answered {
        /// When.
        at: Nanos,
        /// The attempt's number.
        attempt: u32,
        /// The answer's status name (`ok`, `unavailable`, …).
        status: &'static str,
        /// The client stopped waiting (attempt timeout).
        timeout: bool,
    },
    /// The policy decided to retry after a backoff ending at `until`.
    Backoff {
        /// When the decision was made.
        at: Nanos,
        /// When the request is due again (its next attempt may still wait
        /// for a rate limiter or the dispatcher).
        until: Nanos,
    },
    /// The request ended.
    Ended {
        /// When.
        at: Nanos,
        /// `succeeded`, or why it was given up (`gave up: budget`, …).
        outcome: &'static str,
    },
}

/// The story of one traced request.
#[derive(Clone, Debug, PartialEq)]
pub struct Tale {
    /// The request's id: its place in the order requests were opened in
    /// the run (0 = the first).
    pub id: u64,
    /// Why it was chosen.
    pub pick: Pick,
    /// Its client.
    pub client: u32,
    /// When it was opened.
    pub start: Nanos,
    /// What happened, in order.
    pub marks: Vec<Mark>,
    /// Marks beyond the per-request limit were dropped (the end is
    /// always kept).
    pub truncated: bool,
    /// Attempts the request sent, counted past the limit on marks too.
    pub attempts: u32,
}
