//! Runs every (policy, replication) of a scenario in parallel and returns
//! the results in a fixed order, so outputs never depend on thread count.

use crate::metrics::RunResult;
use crate::model::run::simulate;
use crate::scenario::Scenario;
use rayon::prelude::*;

/// Runs policies × replications; results sorted by (policy, replication).
/// `on_done` is called once per finished run (from any thread).
pub fn run_all(
    scenario: &Scenario,
    replications: u32,
    on_done: &(dyn Fn() + Sync),
) -> Vec<RunResult> {
    let jobs: Vec<(usize, u32)> = (0..scenario.policies().len())
        .flat_map(|p| (0..replications).map(move |r| (p, r)))
        .collect();
    jobs.par_iter()
        .map(|&(p, r)| {
            let res = simulate(scenario, p, r);
            on_done();
            res
        })
        .collect()
}
