//! What the model records while it runs: the per-bin counts and levels
//! ([`Collector`]), the whole-run counts ([`RunSummary`]) and the latency
//! histogram of counted requests. Requests that arrived before the warm-up
//! ends still load the system and show in the time series, but are left
//! out of the summary.

use super::requests::Requests;
use crate::metrics::collector::Collector;
use crate::metrics::quantile::LogHistogram;
use crate::metrics::RunSummary;
use crate::time::Nanos;

/// The run's recorders.
#[derive(Clone, Debug)]
pub struct Meter {
    /// Per-bin counts and levels.
    pub col: Collector,
    /// Whole-run counts (after the warm-up).
    pub summary: RunSummary,
    /// Latencies of the counted requests that succeeded.
    pub latency: LogHistogram,
    warmup: Nanos,
}

impl Meter {
    /// Recorders for a run of `run_end` ns in bins of `bin` ns; `limiter`:
    /// the policy has a client-side rate limiter (its columns are filled).
    pub fn new(bin: Nanos, run_end: Nanos, warmup: Nanos, limiter: bool) -> Meter {
        Meter {
            col: Collector::with_limiter(bin, run_end, limiter),
            summary: RunSummary::default(),
            latency: LogHistogram::new(),
            warmup,
        }
    }

    /// Whether what happens at `now` counts in the summary.
    #[inline]
    pub fn counted(&self, now: Nanos) -> bool {
        now >= self.warmup
    }

    /// Brings the time series to `now`, the time of the next event, for
    /// the requests (or a tier's calls) in `reqs`: a bin that closes reads
    /// how many are open and since when (see [`Collector::advance`]).
    #[inline(always)]
    pub fn advance(&mut self, now: Nanos, reqs: &mut Requests) {
        if self.col.closes_bin(now) {
            self.col.set_open(reqs.open_count(), reqs.oldest_start());
        }
        self.col.advance(now, reqs.retrying(), reqs.waiting());
    }

    /// The warm-up's end.
    pub fn warmup(&self) -> Nanos {
        self.warmup
    }
}
