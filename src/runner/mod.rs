//! The one place runs fan out over threads: `run`, `sweep` and `tune` all
//! hand a list of (scenario, policy, replication) jobs to [`run_jobs`] and
//! get the results back in the jobs' order, so outputs never depend on the
//! thread count. Searches may end each run as soon as its outcome is
//! decided ([`early`]), and simulate once the part that runs of one
//! policy and replication share ([`shared`]).

pub mod early;
pub mod estimate;
pub mod shared;
pub mod storm;
pub mod trace;

use crate::engine::stop;
use crate::metrics::RunResult;
use crate::model::run::simulate;
pub use crate::model::run::RunError;
use crate::scenario::Scenario;
use rayon::prelude::*;

/// One run to make: policy `policy` of `scenario`, replication
/// `replication`.
#[derive(Clone, Copy, Debug)]
pub struct Job<'a> {
    /// The scenario (each sweep point or tuning candidate is its own).
    pub scenario: &'a Scenario,
    /// The policy's index in the scenario.
    pub policy: usize,
    /// The replication (picks the random streams).
    pub replication: u32,
}

/// Every (policy, replication) job of one scenario, in (policy,
/// replication) order.
pub fn jobs_of(scenario: &Scenario, replications: u32) -> Vec<Job<'_>> {
    (0..scenario.policies().len())
        .flat_map(|policy| {
            (0..replications).map(move |replication| Job {
                scenario,
                policy,
                replication,
            })
        })
        .collect()
}

/// Runs `jobs` in parallel and returns their results in the jobs' order.
/// Time series are dropped as soon as a run ends unless `keep_bins` (a
/// sweep or a search needs only the summaries). `on_done` is called once
/// per finished run, from any thread. The first failed run (in job order)
/// fails the whole batch; the others stop early.
pub fn run_jobs(
    jobs: &[Job<'_>],
    keep_bins: bool,
    on_done: &(dyn Fn() + Sync),
) -> Result<Vec<RunResult>, RunError> {
    jobs.par_iter()
        .map(|job| {
            // A run checks for Ctrl-C every 65,536 events, which a short one
            // may never reach: a batch of thousands of them must still stop.
            if stop::requested() {
                return Err(RunError::Interrupted);
            }
            let mut res = simulate(job.scenario, job.policy, job.replication)?;
            if !keep_bins {
                res.tiers[0].bins = Vec::new();
            }
            on_done();
            Ok(res)
        })
        .collect()
}

/// Runs policies × replications of one scenario; results sorted by
/// (policy, replication), time series kept.
pub fn run_all(
    scenario: &Scenario,
    replications: u32,
    on_done: &(dyn Fn() + Sync),
) -> Result<Vec<RunResult>, RunError> {
    run_jobs(&jobs_of(scenario, replications), true, on_done)
}
