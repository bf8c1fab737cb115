//! `run --trace N`: the stories of N top-level requests per policy, from
//! replication 0, in two passes over the same deterministic run (choose,
//! then record; see `model::story`). Policies run in parallel; each
//! policy's runs are single-threaded, so the stories are the same on any
//! thread count.

use crate::metrics::story::Tale;
use crate::model::run::{simulate_story, RunError};
use crate::model::story::Story;
use crate::scenario::Scenario;
use rayon::prelude::*;

/// The tales of up to `n` requests of each policy of `scenario`, in
/// policy order (each in the order its requests were opened).
pub fn tales(scenario: &Scenario, n: usize) -> Result<Vec<Vec<Tale>>, RunError> {
    (0..scenario.policies().len())
        .into_par_iter()
        .map(|p| {
            let (_, first) = simulate_story(scenario, p, 0, Some(Box::new(Story::choose(n))))?;
            let chosen = first.map(|s| s.chosen()).unwrap_or_default();
            let (_, second) =
                simulate_story(scenario, p, 0, Some(Box::new(Story::record(chosen))))?;
            Ok(second.map(|s| s.into_tales()).unwrap_or_default())
        })
        .collect()
}
