//! Streams a run's counts into time bins as the run goes.
//!
//! The model bumps counters and sets levels (queue length, busy workers…);
//! before each event it calls [`Collector::advance`], which records the
//! event's time and closes the bins that ended. A level is integrated over
//! time (exactly, in integer nanoseconds) only when it changes or a bin
//! closes, so an event that changes no level costs a comparison. Memory is
//! one row per bin plus fixed-size histograms (latency, retry gap),
//! whatever the number of requests.
//!
//! Levels read at a bin's end (requests open, the oldest one's arrival)
//! are handed over with [`Collector::set_open`] only when an event is about
//! to close a bin ([`Collector::closes_bin`]), so the hot path pays nothing
//! for them.

use super::quantile::LogHistogram;
use super::window::PeakWindow;
use super::BinRow;
use crate::time::{ns_f64, secs, Nanos};

/// Event counts of the current bin.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counts {
    /// New requests that arrived.
    pub demand: u64,
    /// First attempts sent.
    pub first_attempts: u64,
    /// Retries (and hedges) sent.
    pub retries: u64,
    /// Attempts that reached the backend.
    pub offered: u64,
    /// Attempts the backend rejected.
    pub rejected: u64,
    /// Requests that succeeded.
    pub goodput: u64,
    /// Served attempts whose client had already given up.
    pub wasted: u64,
    /// Attempts the client abandoned at its attempt timeout.
    pub timeouts: u64,
    /// Attempts answered with a failure status.
    pub errors: u64,
    /// Requests given up (deadline, limits, budget, retries off).
    pub dropped: u64,
    /// Requests given up at their retry limits.
    pub dead_lettered: u64,
    /// Requests that ended.
    pub finished: u64,
    /// Requests that ended at or after the tail alert's attempt number.
    pub tail_finished: u64,
    /// Attempts that got a rate-limiter token (waiting or not).
    pub client_grants: u64,
    /// Time those attempts waited for it, ns.
    pub client_wait_ns: u64,
    /// Attempts failed at the client, its channel being disconnected
    /// (`reconnect` after a crash): never sent, no backend load.
    pub refused_locally: u64,
}

/// The per-run metric accumulator.
#[derive(Clone, Debug)]
pub struct Collector {
    bin: Nanos,
    run_end: Nanos,
    bin_start: Nanos,
    next_edge: Nanos,
    /// The levels are integrated up to here.
    last: Nanos,
    /// The time of the current event (as of the last `advance`).
    t: Nanos,
    /// Counts of the current bin (the model increments these directly).
    pub now: Counts,
    queue_len: u64,
    queue_max: u64,
    busy: u64,
    active: u64,
    capacity_rps: f64,
    /// Requests waiting to retry (as of the last `advance`).
    retrying: u64,
    /// Requests waiting for a limiter token (as of the last `advance`).
    waiting: u64,
    /// The policy has a client-side rate limiter (its columns are filled).
    limiter: bool,
    /// The clients keep channels that a crash disconnects (the
    /// `refused_locally_rps` column is filled).
    reconnect: bool,
    queue_area: u128,
    busy_area: u128,
    active_area: u128,
    capacity_area: f64,
    latency_bin: LogHistogram,
    gap_bin: LogHistogram,
    /// Requests open (as of the last `set_open`).
    open: u64,
    /// When the oldest open request arrived (as of the last `set_open`).
    oldest_start: Option<Nanos>,
    rows: Vec<BinRow>,
    /// Attempts reaching the backend in the worst 1 s window (the model
    /// feeds it the counted ones).
    pub peak_1s: PeakWindow,
}

impl Collector {
    /// A collector for a run of `run_end` ns in bins of `bin` ns.
    pub fn new(bin: Nanos, run_end: Nanos) -> Collector {
        Collector::with_limiter(bin, run_end, false)
    }

    /// Fills the `refused_locally_rps` column (the clients keep channels
    /// that a crash disconnects).
    pub fn set_reconnect(&mut self) {
        self.reconnect = true;
    }

    /// The same, filling the rate-limiter columns when `limiter`.
    pub fn with_limiter(bin: Nanos, run_end: Nanos, limiter: bool) -> Collector {
        let bins = run_end.div_ceil(bin.max(1));
        Collector {
            bin: bin.max(1),
            run_end,
            bin_start: 0,
            next_edge: bin.max(1).min(run_end),
            last: 0,
            t: 0,
            now: Counts::default(),
            queue_len: 0,
            queue_max: 0,
            busy: 0,
            active: 0,
            capacity_rps: 0.0,
            retrying: 0,
            waiting: 0,
            limiter,
            reconnect: false,
            queue_area: 0,
            busy_area: 0,
            active_area: 0,
            capacity_area: 0.0,
            latency_bin: LogHistogram::new(),
            gap_bin: LogHistogram::new(),
            open: 0,
            oldest_start: None,
            rows: Vec::with_capacity(bins.min(10_000_000) as usize),
            peak_1s: PeakWindow::new(),
        }
    }

    /// Whether an event at `t` closes at least one bin (so the levels read
    /// at bin ends must be handed over first, see [`Collector::set_open`]).
    #[inline]
    pub fn closes_bin(&self, t: Nanos) -> bool {
        t >= self.next_edge && self.bin_start < self.run_end
    }

    /// The requests open since the last event and when the oldest of them
    /// arrived (the model owns both); read when a bin closes.
    pub fn set_open(&mut self, open: u64, oldest_start: Option<Nanos>) {
        self.open = open;
        self.oldest_start = oldest_start;
    }

    /// Brings the bins up to time `t`: closes every bin that ended at or
    /// before `t` (integrating the levels up to its end) and makes `t` the
    /// time at which the level setters integrate. Call before handling an
    /// event at `t`; `retrying` and `waiting` are the numbers of requests
    /// waiting to retry and waiting for a rate-limiter token since the last
    /// event (the model owns those counts).
    #[inline]
    pub fn advance(&mut self, t: Nanos, retrying: u64, waiting: u64) {
        self.retrying = retrying;
        self.waiting = waiting;
        while t >= self.next_edge && self.bin_start < self.run_end {
            let edge = self.next_edge;
            self.integrate(edge);
            self.close_bin();
        }
        self.t = t.min(self.run_end);
    }

    #[inline]
    fn integrate(&mut self, t: Nanos) {
        if t > self.last {
            let dt_ns = t - self.last;
            let dt = dt_ns as u128;
            self.queue_area += self.queue_len as u128 * dt;
            self.busy_area += self.busy as u128 * dt;
            self.active_area += self.active.max(self.busy) as u128 * dt;
            // The same value as `dt as f64`, through `i64` (`ns_f64`).
            self.capacity_area += self.capacity_rps * ns_f64(dt_ns);
            self.last = t;
        }
    }

    fn close_bin(&mut self) {
        let width = self.next_edge - self.bin_start;
        let w = secs(width);
        let c = self.now;
        let rate = |n: u64| n as f64 / w;
        let ms = |ns: Option<f64>| ns.map(|v| v / 1e6);
        let attempts = c.first_attempts + c.retries;
        let edge = self.next_edge;
        self.rows.push(BinRow {
            t_s: secs(self.bin_start),
            demand_rps: rate(c.demand),
            first_attempt_rps: rate(c.first_attempts),
            retry_rps: rate(c.retries),
            offered_rps: rate(c.offered),
            rejected_rps: rate(c.rejected),
            goodput_rps: rate(c.goodput),
            wasted_rps: rate(c.wasted),
            timeout_rps: rate(c.timeouts),
            error_rps: rate(c.errors),
            dropped_rps: rate(c.dropped),
            queue_len_avg: self.queue_area as f64 / width as f64,
            queue_len_max: self.queue_max as f64,
            utilization: if self.active_area > 0 {
                self.busy_area as f64 / self.active_area as f64
            } else {
                0.0
            },
            retrying: self.retrying as f64,
            latency_p50_ms: ms(self.latency_bin.quantile(0.5)),
            latency_p99_ms: ms(self.latency_bin.quantile(0.99)),
            capacity_rps: self.capacity_area / width as f64,
            retry_rate: (attempts > 0).then(|| c.retries as f64 / attempts as f64),
            backlog: self.open as f64,
            oldest_pending_age_s: self
                .oldest_start
                .map_or(0.0, |s| secs(edge.saturating_sub(s))),
            retry_gap_p50_ms: ms(self.gap_bin.quantile(0.5)),
            retry_gap_p99_ms: ms(self.gap_bin.quantile(0.99)),
            dead_lettered_rps: rate(c.dead_lettered),
            finished_rps: rate(c.finished),
            tail_finished_rps: rate(c.tail_finished),
            client_waiting: self.limiter.then_some(self.waiting as f64),
            client_wait_ms: (self.limiter && c.client_grants > 0)
                .then(|| c.client_wait_ns as f64 / c.client_grants as f64 / 1e6),
            refused_locally_rps: self.reconnect.then(|| rate(c.refused_locally)),
            // Filled by the model's application queue in pool mode.
            app_queue: None,
            threads_busy: None,
            app_wait_ms: None,
        });
        self.now = Counts::default();
        self.queue_area = 0;
        self.busy_area = 0;
        self.active_area = 0;
        self.capacity_area = 0.0;
        self.queue_max = self.queue_len;
        self.latency_bin.clear();
        self.gap_bin.clear();
        self.bin_start = self.next_edge;
        self.next_edge = self.next_edge.saturating_add(self.bin).min(self.run_end);
    }

    /// Sets the waiting-room length (after the time was advanced).
    #[inline]
    pub fn set_queue_len(&mut self, n: u64) {
        if n != self.queue_len {
            self.integrate(self.t);
            self.queue_len = n;
            self.queue_max = self.queue_max.max(n);
        }
    }

    /// Sets the number of busy workers.
    #[inline]
    pub fn set_busy(&mut self, n: u64) {
        if n != self.busy {
            self.integrate(self.t);
            self.busy = n;
        }
    }

    /// Sets the number of available workers and the nominal capacity.
    pub fn set_capacity(&mut self, workers: u64, capacity_rps: f64) {
        self.integrate(self.t);
        self.active = workers;
        self.capacity_rps = capacity_rps;
    }

    /// Records the latency of a request that succeeded now.
    #[inline]
    pub fn record_latency(&mut self, ns: Nanos) {
        self.latency_bin.record(ns);
    }

    /// Records the time between a retry sent now and the attempt before it.
    #[inline]
    pub fn record_retry_gap(&mut self, ns: Nanos) {
        self.gap_bin.record(ns);
    }

    /// The bins closed so far.
    pub fn rows(&self) -> &[BinRow] {
        &self.rows
    }

    /// Where the bins closed so far end.
    pub fn closed_until(&self) -> Nanos {
        self.bin_start
    }

    /// Ends the run at `end`, a bin boundary already reached (a run
    /// stopped early): [`Collector::finish`] closes no bin after it.
    pub fn end_at(&mut self, end: Nanos) {
        self.run_end = end.min(self.run_end);
        self.next_edge = self.next_edge.min(self.run_end);
        self.t = self.t.min(self.run_end);
    }

    /// Closes the remaining bins at the run's end and returns them;
    /// `retrying` and `waiting` as for [`Collector::advance`].
    pub fn finish(mut self, retrying: u64, waiting: u64) -> Vec<BinRow> {
        self.advance(self.run_end, retrying, waiting);
        self.rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const S: u64 = 1_000_000_000;

    #[test]
    fn levels_are_time_weighted_per_bin() {
        let mut c = Collector::new(S, 3 * S);
        c.set_capacity(2, 100.0);
        c.advance(S / 2, 0, 0);
        c.set_queue_len(4);
        c.set_busy(2);
        c.advance(S + S / 4, 0, 0);
        c.set_queue_len(0);
        c.now.demand += 3;
        let rows = c.finish(0, 0);
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].queue_len_avg, 2.0);
        assert_eq!(rows[0].queue_len_max, 4.0);
        assert_eq!(rows[0].utilization, 0.5);
        assert_eq!(rows[1].queue_len_avg, 1.0);
        assert_eq!(rows[1].demand_rps, 3.0);
        assert_eq!(rows[2].queue_len_avg, 0.0);
        assert_eq!(rows[2].utilization, 1.0);
        assert_eq!(rows[2].capacity_rps, 100.0);
    }

    #[test]
    fn a_partial_last_bin_reports_rates_over_its_width() {
        let mut c = Collector::new(S, S + S / 2);
        c.advance(S + S / 4, 0, 0);
        c.now.goodput += 5;
        let rows = c.finish(0, 0);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].goodput_rps, 10.0);
    }

    #[test]
    fn levels_read_at_bin_ends_and_retry_figures() {
        let mut c = Collector::new(S, 3 * S);
        // One request open since 0.2 s; two attempts, one a retry 400 ms
        // after its first.
        c.now.first_attempts += 1;
        c.now.retries += 1;
        c.record_retry_gap(400_000_000);
        assert!(!c.closes_bin(S - 1));
        assert!(c.closes_bin(S));
        c.set_open(1, Some(S / 5));
        c.advance(S + S / 2, 0, 0);
        // Nothing open from 1.5 s on.
        assert!(!c.closes_bin(2 * S - 1));
        c.set_open(0, None);
        c.now.finished += 1;
        c.now.dead_lettered += 1;
        let rows = c.finish(0, 0);
        assert_eq!(rows[0].retry_rate, Some(0.5));
        assert_eq!(rows[0].backlog, 1.0);
        assert!((rows[0].oldest_pending_age_s - 0.8).abs() < 1e-12);
        let p50 = rows[0].retry_gap_p50_ms.unwrap();
        assert!((p50 - 400.0).abs() < 400.0 * 0.01, "{p50}");
        assert_eq!(rows[1].retry_rate, None, "no attempt in the bin");
        assert_eq!(rows[1].retry_gap_p50_ms, None);
        assert_eq!((rows[1].backlog, rows[1].oldest_pending_age_s), (0.0, 0.0));
        assert_eq!(rows[1].dead_lettered_rps, 1.0);
        assert_eq!(rows[1].finished_rps, 1.0);
    }
}
