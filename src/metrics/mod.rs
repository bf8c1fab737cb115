//! What a run measured: the per-bin time series and the per-run summary,
//! plus the pure functions that derive report figures from them (recovery,
//! quantiles, means over replications).
//!
//! The model streams counts into a [`collector::Collector`] while it runs, so
//! memory stays proportional to the number of bins, never to the number of
//! requests.

pub mod aggregate;
pub mod alerts;
pub mod collector;
pub mod columns;
pub mod quantile;
pub mod recovery;
pub mod story;
pub mod window;

use serde::Serialize;

/// One time bin of one run: the columns of `timeseries.csv`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct BinRow {
    /// Start of the bin, seconds.
    pub t_s: f64,
    /// New requests per second.
    pub demand_rps: f64,
    /// First attempts sent per second.
    pub first_attempt_rps: f64,
    /// Retries sent per second.
    pub retry_rps: f64,
    /// Attempts arriving at the backend per second.
    pub offered_rps: f64,
    /// Attempts rejected (waiting room full, or shed) per second.
    pub rejected_rps: f64,
    /// Requests completed successfully per second.
    pub goodput_rps: f64,
    /// Attempts served after their client gave up, per second.
    pub wasted_rps: f64,
    /// Attempts abandoned by their client's attempt timeout, per second.
    pub timeout_rps: f64,
    /// Non-ok answers that reached a waiting client, per second.
    pub error_rps: f64,
    /// Requests dropped (limits, deadline, budget) per second.
    pub dropped_rps: f64,
    /// Time-weighted mean number of attempts in the waiting room.
    pub queue_len_avg: f64,
    /// Largest waiting-room length seen in the bin.
    pub queue_len_max: f64,
    /// Busy worker time ÷ available worker time (workers still finishing
    /// work after a capacity fault took them away count as available).
    pub utilization: f64,
    /// Requests waiting to retry at the bin's end.
    pub retrying: f64,
    /// Median latency of the requests that succeeded in the bin (ms).
    pub latency_p50_ms: Option<f64>,
    /// 99th percentile of the same (ms).
    pub latency_p99_ms: Option<f64>,
    /// Nominal capacity in the bin (requests/s), faults included.
    pub capacity_rps: f64,
    /// Retries ÷ attempts sent in the bin (`None`: no attempt).
    pub retry_rate: Option<f64>,
    /// Requests open (not yet finished) at the bin's end.
    pub backlog: f64,
    /// Age of the oldest request still open at the bin's end (s); 0 when
    /// none is open.
    pub oldest_pending_age_s: f64,
    /// Median time between an attempt and the retry that follows it, over
    /// the retries sent in the bin (ms).
    pub retry_gap_p50_ms: Option<f64>,
    /// 99th percentile of the same (ms).
    pub retry_gap_p99_ms: Option<f64>,
    /// Requests given up because their retry limits were reached
    /// (dead-lettered), per second.
    pub dead_lettered_rps: f64,
    /// Requests that ended (any outcome), per second.
    pub finished_rps: f64,
    /// Requests that ended at or after the attempt number the tail alert
    /// watches (`report.alerts.tail_attempt`), per second.
    pub tail_finished_rps: f64,
    /// Requests waiting for a client-side rate limiter's token at the
    /// bin's end (`None` without a limiter).
    pub client_waiting: Option<f64>,
    /// Mean time the attempts that got a limiter token in the bin waited
    /// for it (ms; `None` without a limiter or without such attempts).
    pub client_wait_ms: Option<f64>,
    /// Attempts failed at the client because its channel was disconnected
    /// after a crash, per second: never sent, so no backend load (`None`
    /// unless the policy has `reconnect` and the tier a `crash`).
    pub refused_locally_rps: Option<f64>,
    /// Pool mode: time-weighted mean of the requests waiting for a client
    /// thread in the application queue (`None` in other modes).
    pub app_queue: Option<f64>,
    /// Pool mode: time-weighted mean of the client threads holding a
    /// request.
    pub threads_busy: Option<f64>,
    /// Pool mode: mean time the requests that got a thread in the bin
    /// waited for it (ms; `None` without such requests).
    pub app_wait_ms: Option<f64>,
}

/// Output columns that only some policies produce. A file has such a
/// column when at least one of its runs produced it, so a scenario that
/// uses no such feature writes exactly the columns it always did; the
/// optional columns come after all the others.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extra {
    /// Time spent waiting for a client-side rate limiter.
    ClientWait,
    /// Attempts failed at the client while its channel was disconnected.
    Reconnect,
    /// The application queue of pool-mode traffic.
    Pool,
}

/// Which optional columns a set of runs has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Extras {
    /// Some run had a client-side rate limiter.
    pub client_wait: bool,
    /// Some run's clients kept channels that a crash disconnected.
    pub reconnect: bool,
    /// Some run had pool-mode traffic.
    pub pool: bool,
}

impl Extras {
    /// Every combination of optional columns, each once (what a file
    /// written by some set of runs may hold: `merge` checks a header
    /// against them).
    pub fn every() -> impl Iterator<Item = Extras> {
        (0..8u8).map(|bits| Extras {
            client_wait: bits & 1 != 0,
            reconnect: bits & 2 != 0,
            pool: bits & 4 != 0,
        })
    }

    /// The optional columns `results` produced.
    pub fn of(results: &[RunResult]) -> Extras {
        Extras {
            client_wait: results.iter().any(|r| r.summary().client_wait_ms.is_some()),
            reconnect: results
                .iter()
                .any(|r| r.summary().refused_locally.is_some()),
            pool: results.iter().any(|r| r.summary().app_wait_ms.is_some()),
        }
    }

    /// Whether a column of optional kind `extra` (none: always there) is
    /// written.
    pub fn has(self, extra: Option<Extra>) -> bool {
        match extra {
            None => true,
            Some(Extra::ClientWait) => self.client_wait,
            Some(Extra::Reconnect) => self.reconnect,
            Some(Extra::Pool) => self.pool,
        }
    }
}

/// One column of `timeseries.csv` after `policy` and `replication`: its
/// name and how to read it from a bin. [`BinRow::COLUMNS`] lists them all,
/// in file order; a new column is a field of [`BinRow`], its value in
/// `collector.rs`, and one entry there (appended, so positions never move).
#[derive(Clone, Copy, Debug)]
pub struct BinColumn {
    /// The column's name in the file.
    pub name: &'static str,
    /// The value (`None`: an empty cell).
    pub get: fn(&BinRow) -> Option<f64>,
    /// Written only when a run produced it (see [`Extras`]).
    pub extra: Option<Extra>,
}

impl BinRow {
    /// The columns of `timeseries.csv` after `policy` and `replication`.
    pub const COLUMNS: &'static [BinColumn] = &[
        BinColumn {
            name: "t_s",
            get: |b| Some(b.t_s),
            extra: None,
        },
        BinColumn {
            name: "demand_rps",
            get: |b| Some(b.demand_rps),
            extra: None,
        },
        BinColumn {
            name: "first_attempt_rps",
            get: |b| Some(b.first_attempt_rps),
            extra: None,
        },
        BinColumn {
            name: "retry_rps",
            get: |b| Some(b.retry_rps),
            extra: None,
        },
        BinColumn {
            name: "offered_rps",
            get: |b| Some(b.offered_rps),
            extra: None,
        },
        BinColumn {
            name: "rejected_rps",
            get: |b| Some(b.rejected_rps),
            extra: None,
        },
        BinColumn {
            name: "goodput_rps",
            get: |b| Some(b.goodput_rps),
            extra: None,
        },
        BinColumn {
            name: "wasted_rps",
            get: |b| Some(b.wasted_rps),
            extra: None,
        },
        BinColumn {
            name: "timeout_rps",
            get: |b| Some(b.timeout_rps),
            extra: None,
        },
        BinColumn {
            name: "error_rps",
            get: |b| Some(b.error_rps),
            extra: None,
        },
        BinColumn {
            name: "dropped_rps",
            get: |b| Some(b.dropped_rps),
            extra: None,
        },
        BinColumn {
            name: "queue_len_avg",
            get: |b| Some(b.queue_len_avg),
            extra: None,
        },
        BinColumn {
            name: "queue_len_max",
            get: |b| Some(b.queue_len_max),
            extra: None,
        },
        BinColumn {
            name: "utilization",
            get: |b| Some(b.utilization),
            extra: None,
        },
        BinColumn {
            name: "retrying",
            get: |b| Some(b.retrying),
            extra: None,
        },
        BinColumn {
            name: "latency_p50_ms",
            get: |b| b.latency_p50_ms,
            extra: None,
        },
        BinColumn {
            name: "latency_p99_ms",
            get: |b| b.latency_p99_ms,
            extra: None,
        },
        BinColumn {
            name: "capacity_rps",
            get: |b| Some(b.capacity_rps),
            extra: None,
        },
        BinColumn {
            name: "retry_rate",
            get: |b| b.retry_rate,
            extra: None,
        },
        BinColumn {
            name: "backlog",
            get: |b| Some(b.backlog),
            extra: None,
        },
        BinColumn {
            name: "oldest_pending_age_s",
            get: |b| Some(b.oldest_pending_age_s),
            extra: None,
        },
        BinColumn {
            name: "retry_gap_p50_ms",
            get: |b| b.retry_gap_p50_ms,
            extra: None,
        },
        BinColumn {
            name: "retry_gap_p99_ms",
            get: |b| b.retry_gap_p99_ms,
            extra: None,
        },
        BinColumn {
            name: "dead_lettered_rps",
            get: |b| Some(b.dead_lettered_rps),
            extra: None,
        },
        BinColumn {
            name: "finished_rps",
            get: |b| Some(b.finished_rps),
            extra: None,
        },
        BinColumn {
            name: "tail_finished_rps",
            get: |b| Some(b.tail_finished_rps),
            extra: None,
        },
        BinColumn {
            name: "client_waiting",
            get: |b| b.client_waiting,
            extra: Some(Extra::ClientWait),
        },
        BinColumn {
            name: "client_wait_ms",
            get: |b| b.client_wait_ms,
            extra: Some(Extra::ClientWait),
        },
        BinColumn {
            name: "refused_locally_rps",
            get: |b| b.refused_locally_rps,
            extra: Some(Extra::Reconnect),
        },
        BinColumn {
            name: "app_queue",
            get: |b| b.app_queue,
            extra: Some(Extra::Pool),
        },
        BinColumn {
            name: "threads_busy",
            get: |b| b.threads_busy,
            extra: Some(Extra::Pool),
        },
        BinColumn {
            name: "app_wait_ms",
            get: |b| b.app_wait_ms,
            extra: Some(Extra::Pool),
        },
    ];
}

/// How a run came out of its incident.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Recovery {
    /// It recovered (or there was no incident to recover from).
    #[default]
    Recovered,
    /// It stayed degraded to the end of the run, with at least
    /// `stable_for` of run after the fault in which it could have shown a
    /// recovery: metastable.
    Degraded,
    /// The run ended too soon after the fault to tell: less than
    /// `stable_for` of run after it, or a healthy stretch that the run's
    /// end cut short.
    Undetermined,
}

impl Recovery {
    /// The `metastable` cell: `false`, `true` or `undetermined`.
    pub fn metastable_text(self) -> &'static str {
        match self {
            Recovery::Recovered => "false",
            Recovery::Degraded => "true",
            Recovery::Undetermined => "undetermined",
        }
    }
}

/// Whole-run counts and figures of one (policy, replication) run; requests
/// that arrived before `warmup` are left out.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RunSummary {
    /// Requests counted (arrived at or after `warmup`).
    pub requests: u64,
    /// Counted requests that succeeded.
    pub succeeded: u64,
    /// Counted requests that ended failed: a status the policy does not
    /// retry, or an attempt refused by an open breaker.
    pub failed: u64,
    /// Counted requests given up: deadline, retry limits, budget refusal or
    /// retries switched off.
    pub dropped: u64,
    /// Counted requests still open when the run ended.
    pub unfinished: u64,
    /// Attempts made by the counted requests (sent to the backend).
    pub attempts: u64,
    /// Retries made by the counted requests: each one's attempts after
    /// its first. Not `attempts − requests`, which a request that never
    /// sent a first attempt (refused by a breaker, waiting in a queue or
    /// for a limiter's token) would lower.
    pub retries: u64,
    /// Attempts the workers served (after warmup).
    pub served: u64,
    /// Served attempts whose client had given up (after warmup).
    pub wasted: u64,
    /// Attempts that reached the backend (after warmup).
    pub offered: u64,
    /// Attempts rejected by a full waiting room or load shedding (after warmup).
    pub rejected: u64,
    /// Attempts that had to wait for a worker (after warmup).
    pub waited: u64,
    /// Highest `offered_rps` over the bins after warmup.
    pub peak_offered_rps: f64,
    /// Nominal capacity without faults (requests/s).
    pub capacity_rps: f64,
    /// Start of the first incident fault (s).
    pub fault_start_s: Option<f64>,
    /// End of the last incident fault (s).
    pub fault_end_s: Option<f64>,
    /// First time at or after `fault_end_s` from which every bin for
    /// `stable_for` is healthy (s).
    pub recovered_at_s: Option<f64>,
    /// How the run came out of its incident.
    pub recovery: Recovery,
    /// Median latency of succeeded requests, arrival to answer (ms).
    pub latency_p50_ms: Option<f64>,
    /// Mean latency of succeeded requests (ms).
    pub latency_mean_ms: Option<f64>,
    /// 99th-percentile latency of succeeded requests (ms).
    pub latency_p99_ms: Option<f64>,
    /// When the last counted request succeeded (its `ok` answer reached the
    /// client), seconds from the start: a burst's completion time. Set by
    /// the contention backend; `None` when nothing succeeded or the backend
    /// does not track it.
    pub last_success_s: Option<f64>,
    /// Counted requests given up because the policy's limits were reached
    /// (`max_attempts`, and `max_retry_duration` when set): dead-lettered.
    pub max_attempts_reached: u64,
    /// Counted requests dropped by their deadline.
    pub dropped_deadline: u64,
    /// Counted requests dropped because the retry budget refused a retry.
    pub dropped_budget: u64,
    /// Counted requests dropped because retries were switched off.
    pub dropped_retries_disabled: u64,
    /// Counted requests failed because an open breaker refused an attempt.
    pub failed_breaker: u64,
    /// Counted requests failed with a status the policy does not retry.
    pub failed_non_retryable: u64,
    /// Counted requests the backend completed successfully more than once.
    pub duplicates: u64,
    /// The longest a counted request stayed open: from its arrival to its
    /// end, or to the run's end when unfinished (s).
    pub max_task_age_s: f64,
    /// The most attempts that reached the backend within any 1 s window
    /// (sliding, to the millisecond, after warmup), whatever the bin: the
    /// worst second.
    pub peak_offered_1s: u64,
    /// Seconds from the incident's end until the backlog was back to its
    /// level before the incident; `None` without an incident or if it never
    /// was.
    pub drain_s: Option<f64>,
    /// The attempt distribution of the counted requests that ended: entry
    /// `k` is (succeeded at attempt `k`, given up after `k` attempts), for
    /// `k` below [`DENSE_ATTEMPTS`]; larger counts are in `attempt_tail`.
    pub attempt_counts: Vec<[u64; 2]>,
    /// The same for attempt counts of [`DENSE_ATTEMPTS`] and more, only
    /// those seen, in increasing order: memory follows the requests, not
    /// the largest count (one request of 10⁷ attempts is one entry).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub attempt_tail: std::collections::BTreeMap<u32, [u64; 2]>,
    /// Time the counted requests spent waiting for a client-side rate
    /// limiter's tokens, in all (ns).
    pub client_wait_ns: u64,
    /// `client_wait_ns` per counted request, ms; `None` without a limiter.
    pub client_wait_ms: Option<f64>,
    /// Counted attempts failed at the client while its channel was
    /// disconnected (`None` unless the clients keep channels that a crash
    /// disconnects).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused_locally: Option<u64>,
    /// Pool mode: time the counted requests waited for a client thread ÷
    /// `requests`, ms (those still waiting at the end count what they
    /// waited); `None` in other modes.
    pub app_wait_ms: Option<f64>,
}

impl RunSummary {
    /// `succeeded / requests`.
    pub fn success_rate(&self) -> f64 {
        ratio(self.succeeded as f64, self.requests as f64)
    }
    /// `attempts / requests`.
    pub fn amplification(&self) -> f64 {
        ratio(self.attempts as f64, self.requests as f64)
    }
    /// `peak_offered_rps / capacity_rps`.
    pub fn peak_load_ratio(&self) -> f64 {
        ratio(self.peak_offered_rps, self.capacity_rps)
    }
    /// `peak_offered_1s / capacity_rps`: the worst second's load ÷ the
    /// nominal capacity.
    pub fn peak_load_ratio_1s(&self) -> f64 {
        ratio(self.peak_offered_1s as f64, self.capacity_rps)
    }
    /// `recovered_at_s − fault_end_s`.
    pub fn recovery_after_fault_s(&self) -> Option<f64> {
        Some(self.recovered_at_s? - self.fault_end_s?)
    }
    /// `recovered_at_s − fault_start_s`.
    pub fn degraded_s(&self) -> Option<f64> {
        Some(self.recovered_at_s? - self.fault_start_s?)
    }
    /// True when the run stayed degraded after its incident (see
    /// [`Recovery::Degraded`]).
    pub fn metastable(&self) -> bool {
        self.recovery == Recovery::Degraded
    }
    /// Served attempts that were wasted ÷ all served attempts.
    pub fn wasted_fraction(&self) -> f64 {
        ratio(self.wasted as f64, self.served as f64)
    }
    /// Requests given up because their retry limits were reached, under
    /// the name a task queue uses: they leave the queue unprocessed.
    pub fn dead_lettered(&self) -> u64 {
        self.max_attempts_reached
    }
    /// Records that a counted request ended after `attempts` attempts.
    pub fn record_end(&mut self, attempts: u32, succeeded: bool) {
        let k = attempts as usize;
        if k >= DENSE_ATTEMPTS {
            self.attempt_tail.entry(attempts).or_insert([0, 0])[usize::from(!succeeded)] += 1;
            return;
        }
        if self.attempt_counts.len() <= k {
            self.attempt_counts.resize(k + 1, [0, 0]);
        }
        self.attempt_counts[k][usize::from(!succeeded)] += 1;
    }
}

/// Attempt counts below this are counted in a dense table (`attempts.csv`
/// lists every count up to the largest seen there); larger ones only
/// where seen.
pub const DENSE_ATTEMPTS: usize = 1024;

impl RunSummary {
    /// Every attempt count seen or below the largest dense one, with its
    /// (succeeded, given up) counts, in increasing order.
    pub fn attempt_entries(&self) -> impl Iterator<Item = (usize, [u64; 2])> + '_ {
        self.attempt_counts
            .iter()
            .copied()
            .enumerate()
            .chain(self.attempt_tail.iter().map(|(&k, &c)| (k as usize, c)))
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// Everything one (policy, replication) run produced.
#[derive(Clone, Debug, PartialEq)]
pub struct RunResult {
    /// The policy's name.
    pub policy: String,
    /// The policy's position in the scenario (0 = first).
    pub policy_index: usize,
    /// The replication number (0 = first).
    pub replication: u32,
    /// Events the engine processed (for perf.json only).
    pub events: u64,
    /// When a stop check ended the run early (s: the end of its last
    /// closed bin; a search's run); `None` for a run to the scenario's end.
    pub stopped_at_s: Option<f64>,
    /// Every tier's figures, the top backend (tier 0) first and always
    /// there: its time series and summary are the run's own.
    pub tiers: Vec<TierRun>,
}

impl RunResult {
    /// The top backend's tier (tier 0), whose figures are the run's.
    pub fn top(&self) -> &TierRun {
        &self.tiers[0]
    }

    /// The run's time series, one row per bin (the top backend's).
    pub fn bins(&self) -> &[BinRow] {
        &self.top().bins
    }

    /// The run's whole-run figures (the top backend's).
    pub fn summary(&self) -> &RunSummary {
        &self.top().summary
    }

    /// The run's whole-run figures, taken out of the result.
    pub fn into_summary(self) -> RunSummary {
        let top = self.tiers.into_iter().next();
        top.expect("a run has a top tier").summary
    }

    /// The tiers below the top, in calling order (empty for a scenario
    /// without `downstream` tiers).
    pub fn below(&self) -> &[TierRun] {
        &self.tiers[1..]
    }
}

/// One tier of a multi-tier run: its time series and the figures of
/// `tiers.csv` (counts after the warm-up).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TierRun {
    /// The tier's name.
    pub name: String,
    /// Its time series (for the top backend, the run's own).
    pub bins: Vec<BinRow>,
    /// Attempts that reached it.
    pub attempts: u64,
    /// Attempts its workers served (for a tier that calls one below, up
    /// to the calls).
    pub served: u64,
    /// Attempts it answered with an error (rejected, failed by a fault,
    /// or failed below).
    pub failed: u64,
    /// Served attempts nobody waited for any more.
    pub wasted: u64,
    /// Its capacity without faults (requests/s; 0 when it cannot be
    /// stated).
    pub capacity_rps: f64,
    /// The peak of attempts arriving per second over its capacity.
    pub peak_load_ratio: Option<f64>,
    /// When its calls' goodput came back to the recovery threshold after
    /// the incident (seconds), as the summary's `recovered_at_s`.
    pub recovered_at_s: Option<f64>,
    /// `recovered_at_s` minus the incident's end.
    pub recovery_after_fault_s: Option<f64>,
    /// The whole-run counts of the tier: for a tier below the top, its
    /// `requests` are the calls made to it (the top's: the run summary).
    pub summary: RunSummary,
}

#[cfg(test)]
mod attempt_histogram_tests {
    use super::*;

    /// One request of ten million attempts is one entry, not ten million
    /// rows; the entries still add up to every request and attempt.
    #[test]
    fn large_attempt_counts_are_kept_sparse() {
        let mut s = RunSummary::default();
        s.record_end(3, true);
        s.record_end(10_000_000, false);
        s.record_end(10_000_000, false);
        s.record_end(DENSE_ATTEMPTS as u32, true);
        assert_eq!(s.attempt_counts.len(), 4);
        assert_eq!(s.attempt_tail.len(), 2);
        let entries: Vec<_> = s.attempt_entries().filter(|(_, c)| c != &[0, 0]).collect();
        assert_eq!(
            entries,
            vec![(3, [1, 0]), (DENSE_ATTEMPTS, [1, 0]), (10_000_000, [0, 2])]
        );
        let made: usize = s
            .attempt_entries()
            .map(|(k, c)| k * (c[0] + c[1]) as usize)
            .sum();
        assert_eq!(made, 3 + DENSE_ATTEMPTS + 20_000_000);
    }
}
