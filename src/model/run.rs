//! One run (placeholder).
use crate::metrics::{RunResult, RunSummary};
use crate::scenario::Scenario;

/// Simulates policy `policy_index` of `scenario`, replication `replication`.
pub fn simulate(scenario: &Scenario, policy_index: usize, replication: u32) -> RunResult {
    RunResult {
        policy: scenario.policies[policy_index].name.clone(),
        policy_index,
        replication,
        bins: vec![],
        summary: RunSummary::default(),
        events: 0,
    }
}
