//! Figures per run and per policy: the numbers behind `summary.csv`,
//! `summary.json` and `replications.csv`.
//!
//! The rule is the same for every column: compute the figure for each
//! (policy, replication) run first ([`RunFigures`]), then average it over the
//! replications of a policy ([`PolicySummary`]). A ratio column such as
//! `amplification` is therefore the mean of the per-run ratios, not the ratio
//! of the means, and its `_ci95` half-width describes the spread of exactly
//! the number shown. Optional figures (`recovered_at_s`, latencies) are
//! averaged over the replications that have them. `retry_reduction` compares
//! each run with the *same replication* of the first policy, which saw the
//! same new requests (common random numbers), so the comparison is paired.
//!
//! Every sum runs sequentially in replication order, so the figures are the
//! same whatever the number of threads that produced the runs.

use super::{BinRow, Extra, Recovery, RunResult};

/// `items` grouped by policy index, the policies in order of first
/// appearance and each group in input order (replication order): what
/// every per-policy output walks. Linear in the items, as a scenario may
/// compare thousands of policies.
pub fn by_policy<T>(items: &[T], policy: impl Fn(&T) -> usize) -> Vec<(usize, Vec<&T>)> {
    let mut slot: Vec<Option<usize>> = Vec::new();
    let mut out: Vec<(usize, Vec<&T>)> = Vec::new();
    for item in items {
        let pi = policy(item);
        if slot.len() <= pi {
            slot.resize(pi + 1, None);
        }
        let at = *slot[pi].get_or_insert_with(|| {
            out.push((pi, Vec::new()));
            out.len() - 1
        });
        out[at].1.push(item);
    }
    out
}

/// The columns of `summary.csv` after `policy`, in file order; each
/// variant is the column of the same name (see [`Col::name`], and
/// `docs/model.md` for the definitions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Col {
    /// `requests`: counted requests (arrived at or after `warmup`).
    Requests,
    /// `succeeded`: counted requests that ended `ok`.
    Succeeded,
    /// `failed`: counted requests that ended with an error status.
    Failed,
    /// `dropped`: counted requests given up by the client (limits, deadline,
    /// budget, disabled retries).
    Dropped,
    /// `success_rate`: `succeeded / requests` (0 when no requests).
    SuccessRate,
    /// `attempts`: attempts sent by counted requests, unfinished ones included.
    Attempts,
    /// `amplification`: `attempts / requests`.
    Amplification,
    /// `retries`: the attempts after each counted request's first.
    Retries,
    /// `retry_reduction`: `1 − retries / R₁`, against the first policy's run in
    /// the same replication; empty when `R₁ = 0`.
    RetryReduction,
    /// `peak_offered_rps`: the largest `offered_rps` among bins from `warmup` on,
    /// requests per second.
    PeakOfferedRps,
    /// `peak_load_ratio`: `peak_offered_rps` ÷ nominal capacity (0 when the
    /// capacity is 0 or undefined).
    PeakLoadRatio,
    /// `fault_start_s`: start of the incident window, seconds; empty without one.
    FaultStartS,
    /// `fault_end_s`: end of the incident window, seconds; empty without one.
    FaultEndS,
    /// `recovered_at_s`: recovery time, seconds; empty if none.
    RecoveredAtS,
    /// `recovery_after_fault_s`: `recovered_at_s − fault_end_s`, seconds.
    RecoveryAfterFaultS,
    /// `degraded_s`: `recovered_at_s − fault_start_s`, seconds.
    DegradedS,
    /// `metastable`: `true`, `false` or `undetermined` (no recovery after an
    /// incident that allowed one).
    Metastable,
    /// `latency_p50_ms`: median latency of the counted successes, ms.
    LatencyP50Ms,
    /// `latency_mean_ms`: mean latency of the counted successes, ms.
    LatencyMeanMs,
    /// `latency_p99_ms`: 99th-percentile latency of the counted successes, ms.
    LatencyP99Ms,
    /// `wasted_fraction`: wasted ÷ served attempts, from `warmup` on.
    WastedFraction,
    /// `unfinished`: counted requests still open when the run ended.
    Unfinished,
    /// `max_attempts_reached`: counted requests given up at the policy's limits;
    /// part of `dropped`.
    MaxAttemptsReached,
    /// `dropped_deadline`: counted requests dropped by `traffic.deadline`; part
    /// of `dropped`.
    DroppedDeadline,
    /// `dropped_budget`: counted requests dropped because the retry budget
    /// refused a retry; part of `dropped`.
    DroppedBudget,
    /// `dropped_retries_disabled`: counted requests dropped while
    /// `disable_retries` was active; part of `dropped`.
    DroppedRetriesDisabled,
    /// `failed_breaker`: counted requests failed because an open circuit breaker
    /// refused an attempt; part of `failed`.
    FailedBreaker,
    /// `failed_non_retryable`: counted requests failed with a status not in
    /// `retry_on`; part of `failed`.
    FailedNonRetryable,
    /// `duplicates`: duplicate executions: successful completions by the
    /// backend beyond each counted request's first.
    Duplicates,
    /// `max_task_age_s`: the longest a counted request stayed open, seconds.
    MaxTaskAgeS,
    /// `dead_lettered`: the same number as `max_attempts_reached`, under the
    /// queue's name.
    DeadLettered,
    /// `drain_s`: how long the backlog took to get back to its healthy
    /// level (before the incident, or the recovered run's) after
    /// `fault_end_s`, seconds; empty when it never did.
    DrainS,
    /// `client_wait_ms`: time the counted requests waited for rate-limiter
    /// tokens ÷ `requests`, ms; only with a `rate_limiter`.
    ClientWaitMs,
    /// `refused_locally`: counted attempts that failed at the client, its
    /// channel being disconnected after a crash (never sent: no backend
    /// load); only with `reconnect` and a `crash`.
    RefusedLocally,
    /// `app_wait_ms`: time the counted requests waited for a client
    /// thread ÷ `requests`, ms; only in pool mode.
    AppWaitMs,
}

/// Number of [`Col`] values.
pub const NCOLS: usize = 35;

impl Col {
    /// Every column, in file order.
    pub const ALL: [Col; NCOLS] = [
        Col::Requests,
        Col::Succeeded,
        Col::Failed,
        Col::Dropped,
        Col::SuccessRate,
        Col::Attempts,
        Col::Amplification,
        Col::Retries,
        Col::RetryReduction,
        Col::PeakOfferedRps,
        Col::PeakLoadRatio,
        Col::FaultStartS,
        Col::FaultEndS,
        Col::RecoveredAtS,
        Col::RecoveryAfterFaultS,
        Col::DegradedS,
        Col::Metastable,
        Col::LatencyP50Ms,
        Col::LatencyMeanMs,
        Col::LatencyP99Ms,
        Col::WastedFraction,
        Col::Unfinished,
        Col::MaxAttemptsReached,
        Col::DroppedDeadline,
        Col::DroppedBudget,
        Col::DroppedRetriesDisabled,
        Col::FailedBreaker,
        Col::FailedNonRetryable,
        Col::Duplicates,
        Col::MaxTaskAgeS,
        Col::DeadLettered,
        Col::DrainS,
        Col::ClientWaitMs,
        Col::RefusedLocally,
        Col::AppWaitMs,
    ];

    /// The column's name in the report files.
    pub fn name(self) -> &'static str {
        match self {
            Col::Requests => "requests",
            Col::Succeeded => "succeeded",
            Col::Failed => "failed",
            Col::Dropped => "dropped",
            Col::SuccessRate => "success_rate",
            Col::Attempts => "attempts",
            Col::Amplification => "amplification",
            Col::Retries => "retries",
            Col::RetryReduction => "retry_reduction",
            Col::PeakOfferedRps => "peak_offered_rps",
            Col::PeakLoadRatio => "peak_load_ratio",
            Col::FaultStartS => "fault_start_s",
            Col::FaultEndS => "fault_end_s",
            Col::RecoveredAtS => "recovered_at_s",
            Col::RecoveryAfterFaultS => "recovery_after_fault_s",
            Col::DegradedS => "degraded_s",
            Col::Metastable => "metastable",
            Col::LatencyP50Ms => "latency_p50_ms",
            Col::LatencyMeanMs => "latency_mean_ms",
            Col::LatencyP99Ms => "latency_p99_ms",
            Col::WastedFraction => "wasted_fraction",
            Col::Unfinished => "unfinished",
            Col::MaxAttemptsReached => "max_attempts_reached",
            Col::DroppedDeadline => "dropped_deadline",
            Col::DroppedBudget => "dropped_budget",
            Col::DroppedRetriesDisabled => "dropped_retries_disabled",
            Col::FailedBreaker => "failed_breaker",
            Col::FailedNonRetryable => "failed_non_retryable",
            Col::Duplicates => "duplicates",
            Col::MaxTaskAgeS => "max_task_age_s",
            Col::DeadLettered => "dead_lettered",
            Col::DrainS => "drain_s",
            Col::ClientWaitMs => "client_wait_ms",
            Col::RefusedLocally => "refused_locally",
            Col::AppWaitMs => "app_wait_ms",
        }
    }

    /// The optional kind of the column (`None`: always written); optional
    /// columns come after all the others, so positions never move.
    pub fn extra(self) -> Option<Extra> {
        match self {
            Col::ClientWaitMs => Some(Extra::ClientWait),
            Col::RefusedLocally => Some(Extra::Reconnect),
            Col::AppWaitMs => Some(Extra::Pool),
            _ => None,
        }
    }

    /// Position in [`Col::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// Whether the column is a number (gets a `_ci95` column); only
    /// `metastable` is not.
    pub fn is_numeric(self) -> bool {
        self != Col::Metastable
    }
}

/// The figures of one (policy, replication) run, one value per [`Col`]
/// (`metastable` as 1.0 / 0.0, `None` when undetermined), `None` where a
/// figure does not exist.
#[derive(Clone, Debug, PartialEq)]
pub struct RunFigures {
    /// The policy's name.
    pub policy: String,
    /// The policy's position in the scenario.
    pub policy_index: usize,
    /// Which replication this run was.
    pub replication: u32,
    /// One value per column, indexed by [`Col::index`].
    pub values: [Option<f64>; NCOLS],
    /// How the run came out of its incident.
    pub recovery: Recovery,
}

impl RunFigures {
    /// The run's value of `col`.
    pub fn get(&self, col: Col) -> Option<f64> {
        self.values[col.index()]
    }

    /// Whether this run stayed degraded after its incident.
    pub fn metastable(&self) -> bool {
        self.recovery == Recovery::Degraded
    }

    /// Computes every figure of `run`; `first_retries` is the retry count of
    /// the first policy's run with the same replication (for
    /// `retry_reduction`).
    pub fn of(run: &RunResult, first_retries: Option<u64>) -> RunFigures {
        let s = &run.summary();
        let retries = s.retries;
        let retry_reduction = match first_retries {
            Some(f) if f > 0 => Some(1.0 - retries as f64 / f as f64),
            _ => None,
        };
        let mut values = [None; NCOLS];
        for col in Col::ALL {
            values[col.index()] = match col {
                Col::Requests => Some(s.requests as f64),
                Col::Succeeded => Some(s.succeeded as f64),
                Col::Failed => Some(s.failed as f64),
                Col::Dropped => Some(s.dropped as f64),
                Col::SuccessRate => Some(s.success_rate()),
                Col::Attempts => Some(s.attempts as f64),
                Col::Amplification => Some(s.amplification()),
                Col::Retries => Some(retries as f64),
                Col::RetryReduction => retry_reduction,
                Col::PeakOfferedRps => Some(s.peak_offered_rps),
                Col::PeakLoadRatio => Some(s.peak_load_ratio()),
                Col::FaultStartS => s.fault_start_s,
                Col::FaultEndS => s.fault_end_s,
                Col::RecoveredAtS => s.recovered_at_s,
                Col::RecoveryAfterFaultS => s.recovery_after_fault_s(),
                Col::DegradedS => s.degraded_s(),
                Col::Metastable => match s.recovery {
                    Recovery::Recovered => Some(0.0),
                    Recovery::Degraded => Some(1.0),
                    Recovery::Undetermined => None,
                },
                Col::LatencyP50Ms => s.latency_p50_ms,
                Col::LatencyMeanMs => s.latency_mean_ms,
                Col::LatencyP99Ms => s.latency_p99_ms,
                Col::WastedFraction => Some(s.wasted_fraction()),
                Col::Unfinished => Some(s.unfinished as f64),
                Col::MaxAttemptsReached => Some(s.max_attempts_reached as f64),
                Col::DroppedDeadline => Some(s.dropped_deadline as f64),
                Col::DroppedBudget => Some(s.dropped_budget as f64),
                Col::DroppedRetriesDisabled => Some(s.dropped_retries_disabled as f64),
                Col::FailedBreaker => Some(s.failed_breaker as f64),
                Col::FailedNonRetryable => Some(s.failed_non_retryable as f64),
                Col::Duplicates => Some(s.duplicates as f64),
                Col::MaxTaskAgeS => Some(s.max_task_age_s),
                Col::DeadLettered => Some(s.dead_lettered() as f64),
                Col::DrainS => s.drain_s,
                Col::ClientWaitMs => s.client_wait_ms,
                Col::RefusedLocally => s.refused_locally.map(|n| n as f64),
                Col::AppWaitMs => s.app_wait_ms,
            };
        }
        RunFigures {
            policy: run.policy.clone(),
            policy_index: run.policy_index,
            replication: run.replication,
            values,
            recovery: s.recovery,
        }
    }
}

/// The figures of every run, in the order given. The first policy is the
/// one with the lowest `policy_index` among `results`.
pub fn run_figures(results: &[RunResult]) -> Vec<RunFigures> {
    let first = results.iter().map(|r| r.policy_index).min();
    results
        .iter()
        .map(|r| {
            let first_retries = results
                .iter()
                .find(|f| Some(f.policy_index) == first && f.replication == r.replication)
                .map(|f| f.summary().retries);
            RunFigures::of(r, first_retries)
        })
        .collect()
}

/// One policy's figures over its replications: the row of `summary.csv`.
#[derive(Clone, Debug, PartialEq)]
pub struct PolicySummary {
    /// The policy's name.
    pub policy: String,
    /// The policy's position in the scenario (fixes its colour in plots).
    pub policy_index: usize,
    /// Number of replications averaged.
    pub replications: usize,
    /// Mean of each column over the replications that have it.
    pub mean: [Option<f64>; NCOLS],
    /// 95 % confidence half-width of each mean (`None` with fewer than two
    /// values, and always for `metastable`).
    pub ci95: [Option<f64>; NCOLS],
    /// How many replications had each column.
    pub count: [usize; NCOLS],
    /// The policy's outcome: `Degraded` when a strict majority of
    /// replications stayed degraded, `Undetermined` when a strict majority
    /// could not tell, `Recovered` otherwise.
    pub recovery: Recovery,
    /// True when a strict majority of replications stayed metastable.
    pub metastable: bool,
    /// Fraction of replications that stayed metastable.
    pub metastable_share: f64,
    /// Number of replications that stayed metastable.
    pub metastable_runs: usize,
    /// Number of replications whose outcome could not be told.
    pub undetermined_runs: usize,
}

impl PolicySummary {
    /// The mean of `col`.
    pub fn get(&self, col: Col) -> Option<f64> {
        self.mean[col.index()]
    }
    /// The confidence half-width of `col`.
    pub fn ci(&self, col: Col) -> Option<f64> {
        self.ci95[col.index()]
    }
}

/// Groups `figures` by policy (in order of first appearance) and averages
/// each column.
pub fn aggregate_figures(figures: &[RunFigures]) -> Vec<PolicySummary> {
    by_policy(figures, |f| f.policy_index)
        .into_iter()
        .map(|(pi, runs)| {
            let mut mean = [None; NCOLS];
            let mut ci95 = [None; NCOLS];
            let mut count = [0; NCOLS];
            for col in Col::ALL {
                let values: Vec<f64> = runs.iter().filter_map(|r| r.get(col)).collect();
                count[col.index()] = values.len();
                if let Some((m, ci)) = mean_ci95(&values) {
                    mean[col.index()] = Some(m);
                    if col.is_numeric() {
                        ci95[col.index()] = ci;
                    }
                }
            }
            let meta = runs.iter().filter(|r| r.metastable()).count();
            let undetermined = runs
                .iter()
                .filter(|r| r.recovery == Recovery::Undetermined)
                .count();
            let recovery = if 2 * meta > runs.len() {
                Recovery::Degraded
            } else if 2 * undetermined > runs.len() {
                Recovery::Undetermined
            } else {
                Recovery::Recovered
            };
            PolicySummary {
                policy: runs[0].policy.clone(),
                policy_index: pi,
                replications: runs.len(),
                mean,
                ci95,
                count,
                recovery,
                metastable: recovery == Recovery::Degraded,
                metastable_share: meta as f64 / runs.len() as f64,
                metastable_runs: meta,
                undetermined_runs: undetermined,
            }
        })
        .collect()
}

/// The rows of `summary.csv`: [`run_figures`] then [`aggregate_figures`].
pub fn aggregate(results: &[RunResult]) -> Vec<PolicySummary> {
    aggregate_figures(&run_figures(results))
}

/// Mean and 95 % confidence half-width (Student's t, n − 1 degrees of
/// freedom, × sd / √n) of `values`, summed in order; `None` when empty, a
/// `None` half-width with a single value.
pub fn mean_ci95(values: &[f64]) -> Option<(f64, Option<f64>)> {
    if values.is_empty() {
        return None;
    }
    let n = values.len() as f64;
    let mut sum = 0.0;
    for v in values {
        sum += v;
    }
    let mean = sum / n;
    if values.len() < 2 {
        return Some((mean, None));
    }
    let mut ss = 0.0;
    for v in values {
        ss += (v - mean) * (v - mean);
    }
    let sd = (ss / (n - 1.0)).sqrt();
    let half = t975(values.len() as u64 - 1) * sd / n.sqrt();
    Some((mean, Some(half)))
}

/// The 97.5 % quantile of Student's t distribution with `dof` degrees of
/// freedom: exact table values up to 30, Cornish–Fisher expansion above
/// (error below 1e-6 there).
pub fn t975(dof: u64) -> f64 {
    const TABLE: [f64; 30] = [
        12.706204736,
        4.302652730,
        3.182446305,
        2.776445105,
        2.570581836,
        2.446911851,
        2.364624252,
        2.306004135,
        2.262157163,
        2.228138852,
        2.200985160,
        2.178812830,
        2.160368656,
        2.144786688,
        2.131449546,
        2.119905299,
        2.109815578,
        2.100922040,
        2.093024054,
        2.085963447,
        2.079613845,
        2.073873068,
        2.068657610,
        2.063898562,
        2.059538553,
        2.055529439,
        2.051830516,
        2.048407142,
        2.045229642,
        2.042272456,
    ];
    match dof {
        0 => f64::NAN,
        1..=30 => TABLE[dof as usize - 1],
        _ => {
            let z: f64 = 1.959_963_984_540_054;
            let v = dof as f64;
            let z3 = z.powi(3);
            let z5 = z.powi(5);
            let z7 = z.powi(7);
            let z9 = z.powi(9);
            let g1 = (z3 + z) / 4.0;
            let g2 = (5.0 * z5 + 16.0 * z3 + 3.0 * z) / 96.0;
            let g3 = (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / 384.0;
            let g4 = (79.0 * z9 + 776.0 * z7 + 1482.0 * z5 - 1920.0 * z3 - 945.0 * z) / 92160.0;
            z + g1 / v + g2 / (v * v) + g3 / (v * v * v) + g4 / (v * v * v * v)
        }
    }
}

/// Per-bin mean, minimum and maximum of `value` over several runs of one
/// policy (replications), for plotting a mean line with a min–max band.
/// Bins are matched by position; a bin where no run has a value is `None`.
#[derive(Clone, Debug, PartialEq)]
pub struct BandPoint {
    /// Start of the bin (s).
    pub t_s: f64,
    /// Mean over the runs that have a value in this bin.
    pub mean: f64,
    /// Smallest of those values.
    pub min: f64,
    /// Largest of those values.
    pub max: f64,
}

/// Builds the band of `value` over `runs` (see [`BandPoint`]).
pub fn band(runs: &[&RunResult], value: impl Fn(&BinRow) -> Option<f64>) -> Vec<Option<BandPoint>> {
    let len = runs.iter().map(|r| r.bins().len()).max().unwrap_or(0);
    (0..len)
        .map(|i| {
            let mut sum = 0.0;
            let mut n = 0usize;
            let mut min = f64::INFINITY;
            let mut max = f64::NEG_INFINITY;
            let mut t_s = None;
            for r in runs {
                let Some(bin) = r.bins().get(i) else { continue };
                t_s.get_or_insert(bin.t_s);
                if let Some(v) = value(bin).filter(|v| v.is_finite()) {
                    sum += v;
                    n += 1;
                    min = min.min(v);
                    max = max.max(v);
                }
            }
            (n > 0).then(|| BandPoint {
                t_s: t_s.unwrap_or(0.0),
                mean: sum / n as f64,
                min,
                max,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::RunSummary;

    #[test]
    fn groups_follow_first_appearance_and_keep_input_order() {
        // (policy, replication) in the order a parallel run might finish.
        let items = [(2, 0), (0, 0), (2, 1), (5, 0), (0, 1), (2, 2)];
        let groups = by_policy(&items, |i| i.0);
        let shape: Vec<(usize, Vec<u32>)> = groups
            .iter()
            .map(|(pi, g)| (*pi, g.iter().map(|i| i.1).collect()))
            .collect();
        assert_eq!(shape, [(2, vec![0, 1, 2]), (0, vec![0, 1]), (5, vec![0])]);
        assert!(by_policy(&[] as &[(usize, u32)], |i| i.0).is_empty());
    }

    fn run(pi: usize, rep: u32, attempts: u64, recovered: Option<f64>) -> RunResult {
        RunResult {
            policy: format!("p{pi}"),
            policy_index: pi,
            replication: rep,
            events: 0,
            stopped_at_s: None,
            tiers: vec![crate::metrics::TierRun {
                summary: RunSummary {
                    requests: 100,
                    succeeded: 90,
                    attempts,
                    retries: attempts - 100,
                    fault_start_s: Some(10.0),
                    fault_end_s: Some(20.0),
                    recovered_at_s: recovered,
                    recovery: if recovered.is_some() {
                        Recovery::Recovered
                    } else {
                        Recovery::Degraded
                    },
                    capacity_rps: 10.0,
                    peak_offered_rps: 40.0,
                    ..Default::default()
                },
                ..Default::default()
            }],
        }
    }

    #[test]
    fn t_quantiles_match_the_table_and_the_expansion_agrees_at_30() {
        assert_eq!(t975(1), 12.706204736);
        assert_eq!(t975(4), 2.776445105);
        // The expansion used above 30 must join the table smoothly.
        assert!((t975(31) - 2.039513446).abs() < 1e-5, "{}", t975(31));
        assert!((t975(40) - 2.021075390).abs() < 1e-6);
        assert!((t975(120) - 1.979930405).abs() < 1e-7);
    }

    #[test]
    fn mean_and_half_width() {
        let (m, ci) = mean_ci95(&[1.0, 2.0, 3.0]).unwrap();
        assert_eq!(m, 2.0);
        // sd = 1, n = 3: 4.302652730 / sqrt(3)
        assert!((ci.unwrap() - 4.302652730 / 3f64.sqrt()).abs() < 1e-12);
        assert_eq!(mean_ci95(&[5.0]), Some((5.0, None)));
        assert_eq!(mean_ci95(&[]), None);
    }

    #[test]
    fn retry_reduction_is_paired_by_replication() {
        let results = vec![
            run(0, 0, 300, None),
            run(0, 1, 500, None),
            run(1, 0, 150, Some(30.0)),
            run(1, 1, 200, None),
        ];
        let f = run_figures(&results);
        assert_eq!(f[0].get(Col::RetryReduction), Some(0.0));
        assert_eq!(f[2].get(Col::RetryReduction), Some(1.0 - 50.0 / 200.0));
        assert_eq!(f[3].get(Col::RetryReduction), Some(1.0 - 100.0 / 400.0));
        let s = aggregate(&results);
        assert_eq!(s.len(), 2);
        assert_eq!(s[1].get(Col::RetryReduction), Some(0.75));
        assert_eq!(s[1].ci(Col::RetryReduction), Some(0.0));
        assert_eq!(s[1].get(Col::Retries), Some(75.0));
        // Recovered in one of two runs: mean over the one, not a majority.
        assert_eq!(s[1].get(Col::RecoveredAtS), Some(30.0));
        assert_eq!(s[1].count[Col::RecoveredAtS.index()], 1);
        assert_eq!(s[1].ci(Col::RecoveredAtS), None);
        assert!(!s[1].metastable);
        assert_eq!(s[1].metastable_share, 0.5);
        assert!(s[0].metastable);
    }

    #[test]
    fn no_retries_in_the_first_policy_leaves_reduction_empty() {
        let results = vec![run(0, 0, 100, None), run(1, 0, 150, None)];
        let s = aggregate(&results);
        assert_eq!(s[0].get(Col::RetryReduction), None);
        assert_eq!(s[1].get(Col::RetryReduction), None);
    }

    #[test]
    fn band_takes_mean_min_max_per_bin() {
        let mut a = run(0, 0, 100, None);
        let mut b = run(0, 1, 100, None);
        a.tiers[0].bins = vec![BinRow {
            t_s: 0.0,
            offered_rps: 1.0,
            ..Default::default()
        }];
        b.tiers[0].bins = vec![BinRow {
            t_s: 0.0,
            offered_rps: 3.0,
            ..Default::default()
        }];
        let band = band(&[&a, &b], |b| Some(b.offered_rps));
        assert_eq!(
            band,
            vec![Some(BandPoint {
                t_s: 0.0,
                mean: 2.0,
                min: 1.0,
                max: 3.0
            })]
        );
    }
}
