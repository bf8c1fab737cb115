//! What the Cloud Tasks API lets an operator set on a queue, and what the
//! service sets by itself, as `tune` needs it.
//!
//! Sources (Google's Cloud Tasks reference, v2): `RateLimits`
//! (`max_dispatches_per_second` at most 500, `max_concurrent_dispatches` at
//! most 5,000, `max_burst_size` output only: "Cloud Tasks will pick the
//! value of max_burst_size based on the value of
//! max_dispatches_per_second"; the v2beta2/v2beta3 references add "The
//! maximum value of max_burst_size is 500"), `RetryConfig` (`min_backoff`,
//! `max_backoff` and `max_retry_duration` "will be truncated to the nearest
//! second"; `max_attempts` ≥ −1), and `gcloud tasks queues update`, which
//! has no flag for the burst. The one published pairing of rate and burst
//! is a new queue's: 500/s and 100 ("Create Cloud Tasks queues", the
//! `describe` output). `docs/model.md` has the full argument.

/// The largest `max_dispatches_per_second` the API accepts.
pub const MAX_RATE: f64 = 500.0;
/// The largest `max_concurrent_dispatches` the API accepts.
pub const MAX_CONCURRENT: u32 = 5000;
/// The burst of a new queue at the default (and largest) rate, 500/s, as
/// Google's queue-creation page shows it.
pub const DEFAULT_BURST: u32 = 100;
/// The rate that burst goes with.
pub const DEFAULT_RATE: f64 = 500.0;

/// The bursts Cloud Tasks may pick for a queue whose rate an update sets
/// to `rate`, smallest and largest: the rule is not published, so `tune`
/// checks a recommendation at both ends. Low end: the burst proportional
/// to the rate through the one published pair (500/s → 100, so `rate` ÷ 5
/// rounded up, at least 1); high end: that pair's 100 kept whatever the
/// rate. Both rules give 100 at 500/s, the only rate where the burst is
/// known.
pub fn burst_range(rate: f64) -> (u32, u32) {
    let rate = rate.clamp(0.0, MAX_RATE);
    let low = (rate * f64::from(DEFAULT_BURST) / DEFAULT_RATE).ceil() as u32;
    (low.clamp(1, DEFAULT_BURST), DEFAULT_BURST)
}

/// Whether `seconds` is a duration the API keeps as given (whole seconds:
/// it truncates the rest).
pub fn whole_seconds(seconds: f64) -> bool {
    seconds >= 0.0 && seconds.fract() == 0.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_burst_range_holds_the_published_pair_and_shrinks_with_the_rate() {
        assert_eq!(burst_range(500.0), (100, 100));
        assert_eq!(burst_range(50.0), (10, 100));
        assert_eq!(burst_range(1.0), (1, 100));
        assert_eq!(burst_range(2.5), (1, 100));
        assert_eq!(burst_range(7.0), (2, 100));
    }

    #[test]
    fn only_whole_seconds_survive_the_api() {
        assert!(whole_seconds(60.0));
        assert!(whole_seconds(1.0));
        assert!(!whole_seconds(0.5));
        assert!(!whole_seconds(0.1));
    }
}
