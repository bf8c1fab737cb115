//! Runs of a search that share their first part: the cells of a `map`
//! along a fault's length, size or kind (or an action's) are, for one
//! policy and replication, the same run until the first fault or action
//! edge. That part is simulated once per group and every run of the group
//! goes on from a copy of it (`model::run::resume`), which is exactly its
//! run from the start; where `resume` cannot show that, the run starts
//! from time 0. Past that edge, the cells whose faults make the same
//! change there and part later (a fault's length: each cell is the longer
//! faults' run until its own ends) share that part too: it is carried on
//! once with no later edge and paused at each cell's next edge
//! (`parting`). Each run stops once its outcome is decided
//! ([`super::early`]).

use super::early::{run_jobs_until, Question, Start, Work};
use super::{Job, RunError};
use crate::engine::stop;
use crate::metrics::RunResult;
use crate::model::run::{first_edge, next_edge, sharing_key, simulate_to, Paused};
use crate::scenario::Scenario;
use crate::time::Nanos;
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

/// Runs `jobs` in parallel, each stopping once its outcome for `question`
/// is decided, and returns the results in the jobs' order (time series
/// dropped). Jobs of one policy and replication whose scenarios differ
/// only in their faults and actions share the part before the earliest
/// edge among them. `on_done` is called once per finished run. Results
/// do not depend on the grouping or the thread count: each is its job's
/// run.
pub fn run_sharing_prefixes(
    jobs: &[Job<'_>],
    question: Question,
    on_done: &(dyn Fn() + Sync),
) -> Result<Vec<RunResult>, RunError> {
    let groups = groups(jobs);
    let done: Vec<Vec<RunResult>> = groups
        .par_iter()
        .map(|members| run_group(jobs, members, question, on_done))
        .collect::<Result<_, _>>()?;
    let mut results: Vec<Option<RunResult>> = vec![None; jobs.len()];
    for (members, runs) in groups.iter().zip(done) {
        for (&i, r) in members.iter().zip(runs) {
            results[i] = Some(r);
        }
    }
    Ok(results
        .into_iter()
        .map(|r| r.expect("every job is in one group"))
        .collect())
}

/// The indices of `jobs` by group: one policy and replication, scenarios
/// with the same [`sharing_key`]. In order of each group's first job.
/// Groups are told apart by a hash of the key, computed once per
/// scenario, so a scenario with a large inline trace is not held as text
/// once per group; two scenarios whose keys collide only share a group,
/// and `resume` then declines the one that differs.
fn groups(jobs: &[Job<'_>]) -> Vec<Vec<usize>> {
    let mut hashes: BTreeMap<*const Scenario, u64> = BTreeMap::new();
    let mut by_key: BTreeMap<(usize, u32, u64), usize> = BTreeMap::new();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (i, j) in jobs.iter().enumerate() {
        let hash = *hashes
            .entry(std::ptr::from_ref(j.scenario))
            .or_insert_with(|| {
                let mut h = DefaultHasher::new();
                sharing_key(j.scenario).hash(&mut h);
                h.finish()
            });
        let g = *by_key
            .entry((j.policy, j.replication, hash))
            .or_insert_with(|| {
                groups.push(Vec::new());
                groups.len() - 1
            });
        groups[g].push(i);
    }
    groups
}

/// Where a group's shared part ends and whose run it is: the earliest
/// fault or action edge among `members` (above 0), and the member with
/// that edge (the others whose first edge is the same go on from it).
/// `None` when fewer than two jobs share the group or none has an edge.
fn shared_part(jobs: &[Job<'_>], members: &[usize]) -> Option<(Nanos, usize)> {
    if members.len() < 2 {
        return None;
    }
    members
        .iter()
        .filter_map(|&i| Some((first_edge(jobs[i].scenario.spec())?, i)))
        .min()
        .filter(|&(t, _)| t > 0)
}

/// Runs one group's jobs: the part before the group's earliest edge once
/// (when more than one job shares it), then each job from a copy of it.
fn run_group(
    jobs: &[Job<'_>],
    members: &[usize],
    question: Question,
    on_done: &(dyn Fn() + Sync),
) -> Result<Vec<RunResult>, RunError> {
    if stop::requested() {
        return Err(RunError::Interrupted);
    }
    let starts: Vec<Start<'_>> = match shared_part(jobs, members) {
        Some((until, i)) => {
            let j = jobs[i];
            let prefix = simulate_to(j.scenario, j.policy, j.replication, until)?;
            let parted = parting(jobs, members, &prefix, until)?;
            let prefix = Arc::new(prefix);
            members
                .iter()
                .map(|m| {
                    let p = parted.get(m).unwrap_or(&prefix);
                    Start::Resume(Arc::clone(p))
                })
                .collect()
        }
        None => members.iter().map(|_| Start::Fresh).collect(),
    };
    let work: Vec<Work<'_, '_>> = members
        .iter()
        .zip(starts)
        .map(|(&i, start)| Work {
            job: jobs[i],
            early: true,
            start,
        })
        .collect();
    Ok(run_jobs_until(&work, question, None, on_done)?
        .into_iter()
        .map(|(r, _)| r)
        .collect())
}

/// Where each member goes on from once the group's runs part: the
/// shared part carried on past the edge at `edge` (the changes it makes
/// there are the same for those members) and paused at each member's next
/// edge, for the members that can go on from there
/// ([`Paused::resumes`]). A cell with a shorter stall is then the longer
/// stall's run up to its end. Members not in the map go on from `prefix`.
fn parting<'k>(
    jobs: &[Job<'k>],
    members: &[usize],
    prefix: &Paused<'k>,
    edge: Nanos,
) -> Result<BTreeMap<usize, Arc<Paused<'k>>>, RunError> {
    let next: Vec<(usize, Nanos)> = members
        .iter()
        .filter_map(|&m| Some((m, next_edge(jobs[m].scenario.spec(), edge + 1)?)))
        .filter(|&(m, t)| prefix.may_part_at(edge + 1, jobs[m].scenario, t))
        .collect();
    if next.len() < 2 {
        return Ok(BTreeMap::new());
    }
    let mut untils: Vec<Nanos> = next.iter().map(|&(_, t)| t).collect();
    untils.sort_unstable();
    untils.dedup();
    let pauses: Vec<Arc<Paused<'k>>> = prefix
        .continue_to(edge + 1, &untils)?
        .into_iter()
        .map(Arc::new)
        .collect();
    let mut parted = BTreeMap::new();
    for (m, t) in next {
        let p = &pauses[untils
            .binary_search(&t)
            .expect("every next edge has a pause")];
        let j = jobs[m];
        if p.resumes(j.scenario, j.policy, j.replication) {
            parted.insert(m, Arc::clone(p));
        }
    }
    Ok(parted)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shipped HotOS '21 toy, shortened to 90 s, at `rate` QPS, with
    /// its stall from `start` for `length`.
    fn toy(rate: u32, start: &str, length: &str) -> Scenario {
        let mut v: serde_json::Value =
            serde_json::from_str(include_str!("../../scenarios/hotos21-toy.json")).unwrap();
        v["duration"] = "90s".into();
        v["traffic"]["rate"] = rate.into();
        v["faults"][0]["capacity"]["start"] = start.into();
        v["faults"][0]["capacity"]["duration"] = length.into();
        Scenario::from_json(&v.to_string()).unwrap()
    }

    #[test]
    fn shared_runs_are_the_runs_from_the_start() {
        // Two loads (two groups per policy and replication), three stall
        // lengths from 20 s, and one stall from 21 s, which cannot go on
        // from the group's pause at 20 s and runs from its start. The
        // stalls from 20 s part at their ends, 23, 28 and 35 s.
        let cells: Vec<Scenario> = [(120, "20s", "3s"), (120, "20s", "8s"), (120, "21s", "8s")]
            .into_iter()
            .chain([(220, "20s", "3s"), (220, "20s", "15s")])
            .map(|(rate, start, length)| toy(rate, start, length))
            .collect();
        let jobs: Vec<Job<'_>> = cells
            .iter()
            .flat_map(|s| super::super::jobs_of(s, 2))
            .collect();
        let groups = groups(&jobs);
        assert_eq!(groups.len(), 2 * 3 * 2);
        // Each group's part before the stall at 20 s is shared, and every
        // cell whose stall starts then goes on from it; the stall from
        // 21 s cannot.
        for members in &groups {
            let (until, i) = shared_part(&jobs, members).unwrap();
            assert_eq!(until, 20_000_000_000);
            let j = jobs[i];
            let paused = simulate_to(j.scenario, j.policy, j.replication, until).unwrap();
            for &m in members {
                let (job, late) = (jobs[m], std::ptr::eq(jobs[m].scenario, &cells[2]));
                let resumed = paused.resume(job.scenario, job.policy, job.replication, None);
                assert_eq!(resumed.unwrap().is_some(), !late, "job {m}");
            }
            // Past the stall's start, the cells from 20 s go on from the
            // stall carried on to each one's end; the one from 21 s
            // (its next edge is its start) does not.
            let parted = parting(&jobs, members, &paused, until).unwrap();
            for &m in members {
                let late = std::ptr::eq(jobs[m].scenario, &cells[2]);
                assert_eq!(parted.contains_key(&m), !late, "job {m}");
            }
        }
        let question = Question {
            recover_within: Some(10_000_000_000),
        };
        let shared = run_sharing_prefixes(&jobs, question, &|| {}).unwrap();
        let fresh: Vec<Work<'_, '_>> = jobs
            .iter()
            .map(|&job| Work {
                job,
                early: true,
                start: Start::Fresh,
            })
            .collect();
        let alone: Vec<RunResult> = run_jobs_until(&fresh, question, None, &|| {})
            .unwrap()
            .into_iter()
            .map(|(r, _)| r)
            .collect();
        assert_eq!(shared, alone);
        // The runs did stop early: the low load once recovered and held,
        // the high one once past its deadline.
        let whole = super::super::run_jobs(&jobs, false, &|| {}).unwrap();
        for (stopped, full) in shared.iter().zip(&whole) {
            assert!(stopped.summary().requests < full.summary().requests);
        }
    }
}
