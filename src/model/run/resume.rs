//! A run paused part-way and resumed under another scenario, so that runs
//! which share their first part simulate it once: `assess`'s search for
//! the load that sustains a storm changes the arrival rate only when the
//! fault ends, and the cells of a `map` along a fault's length or size
//! differ only from the fault's start, so every probe or cell of one
//! policy and replication is the same run until then.
//!
//! [`simulate_to`] handles every event before a time `until` and no other
//! and keeps the run's whole state. [`Paused::resume`] continues a copy
//! of it under a scenario that differs from the paused one only in
//!
//! - its traffic profile, where the two profiles place every arrival
//!   before the last one drawn alike ([`Profile::agrees_before`]). The
//!   arrival drawn and not yet due is placed again under the new profile
//!   from the same random draw, keeping its place among events at equal
//!   times ([`EventQueue::retime_stream`]);
//! - its faults and actions, where no tier's timeline has an edge before
//!   `until` in either scenario and each tier's first edge is the same
//!   ([`Timeline::can_become`]): the run has reached no edge yet, and the
//!   wake-up it queued for the first one is the new timeline's too;
//! - or, for a run carried on past its shared edges with no later one
//!   ([`Paused::continue_to`]), where the new timeline makes the same
//!   changes at those edges and its next edge is the pause itself
//!   ([`Timeline::can_continue_as`]): its wake-up is queued then, and no
//!   other event may be due at that instant, so that the edge is handled
//!   first there, as in the run from its start. A cell with a shorter
//!   stall is thus the longer stall's run up to its end.
//!
//! Nothing else in the state depends on those, so the resumed run is
//! exactly the run of the new scenario from its start: the same events in
//! the same order, the same outputs. Where that cannot be shown (another
//! difference, the profiles part before the last arrival, a fault that
//! starts before the pause or at another time, the caller's stop check
//! would already have stopped the run), `resume` declines and the caller
//! runs the scenario from its start.
//!
//! [`Profile::agrees_before`]: crate::model::traffic::Profile::agrees_before
//! [`EventQueue::retime_stream`]: crate::engine::EventQueue::retime_stream
//! [`Timeline::can_become`]: crate::model::faults::Timeline::can_become
//! [`Timeline::can_continue_as`]: crate::model::faults::Timeline::can_continue_as

use super::{drive, run_to_end, timeline_of, Begin, Progress, Ran, Sim, StopCheck};
use crate::metrics::RunResult;
use crate::model::error::RunError;
use crate::model::event::Ev;
use crate::model::faults::Timeline;
use crate::model::traffic::Traffic;
use crate::scenario::spec::ScenarioSpec;
use crate::scenario::Scenario;
use crate::time::Nanos;

/// A run of one policy and replication of a scenario, paused before a
/// time: every event before it handled, none after.
pub struct Paused<'a> {
    /// `None` when the run ended before the pause time.
    sim: Option<Box<Sim<'a>>>,
    scenario: &'a Scenario,
    /// The scenario as JSON without what a resumed run may change
    /// ([`rest_of`]), to compare.
    rest: serde_json::Value,
    policy_index: usize,
    replication: u32,
    /// The pause time, ns.
    until: Nanos,
}

/// Simulates policy `policy_index` of `scenario`, replication
/// `replication`, up to `until` (ns): the events before it, no other.
pub fn simulate_to(
    scenario: &Scenario,
    policy_index: usize,
    replication: u32,
    until: Nanos,
) -> Result<Paused<'_>, RunError> {
    let begin = Begin::Start(None);
    let sim = match drive(scenario, policy_index, replication, begin, None, until, 0)? {
        Ran::Paused(sim) => Some(sim),
        // Nothing left to share: `resume` declines.
        Ran::Ended(..) => None,
    };
    Ok(Paused {
        sim,
        scenario,
        rest: rest_of(scenario),
        policy_index,
        replication,
        until,
    })
}

impl<'a> Paused<'a> {
    /// Policy `policy_index` of `scenario`, replication `replication`,
    /// run from where this run paused, with `stop_check` as in
    /// `simulate_until`: exactly that scenario's run from its start.
    /// `None` when it cannot be resumed from here (see the module's
    /// rules): run it from its start instead. `stop_check` must be a
    /// function of the bins it is given and of figures that only grow.
    pub fn resume(
        &self,
        scenario: &Scenario,
        policy_index: usize,
        replication: u32,
        mut stop_check: Option<StopCheck<'_>>,
    ) -> Result<Option<RunResult>, RunError> {
        let Some(paused) = self.sim.as_deref() else {
            return Ok(None);
        };
        if (policy_index, replication) != (self.policy_index, self.replication)
            || !self.same_but_profile(scenario, policy_index)
        {
            return Ok(None);
        }
        let Some(swaps) = self.swaps(paused, scenario) else {
            return Ok(None);
        };
        // The check sees every bin closed so far, at each count, before
        // the resumed run goes on: had it stopped the run at any of them,
        // it stops it here too, and the run is made from its start. The
        // figures that only grow are read as they stand at the pause, so
        // a check of them fires here at least wherever it fired in the
        // run: it may decline a run it need not, never resume one it
        // should have stopped.
        let now = paused.tiers[super::TOP].progress();
        let rows = now.bins;
        if let Some(check) = stop_check.as_mut() {
            if (1..=rows.len()).any(|n| {
                check(&Progress {
                    bins: &rows[..n],
                    ..now
                })
            }) {
                return Ok(None);
            }
        }
        let mut sim = Box::new(paused.clone());
        sim.spec = scenario.spec();
        for (k, timeline, wake) in swaps {
            sim.tiers[k].timeline = timeline;
            if wake {
                sim.q.schedule_at(self.until, Ev::Edge { tier: k as u8 });
            }
        }
        let Some(next) = sim
            .traffic
            .reprofile(Traffic::profile_of(&scenario.spec().traffic))
        else {
            return Ok(None);
        };
        if next >= sim.run_end || !sim.q.retime_stream(sim.arrivals, next) {
            return Ok(None);
        }
        let closed = rows.len();
        let begin = Begin::From(sim);
        let (result, _) = run_to_end(
            scenario,
            policy_index,
            replication,
            begin,
            stop_check,
            closed,
        )?;
        Ok(Some(result))
    }

    /// The tiers whose faults or actions differ in `scenario`, each with
    /// its new timeline and whether the run must queue its wake-up at the
    /// pause; `None` when a tier's timeline cannot take over here:
    ///
    /// - before any edge, when both first edges coincide (the run has
    ///   queued that wake-up, [`Timeline::can_become`]);
    /// - after a shared part, where the paused run (a run of
    ///   [`Paused::continue_to`]) has made every change the new timeline
    ///   makes before the pause, no other, and the new timeline's next
    ///   edge is the pause ([`Timeline::can_continue_as`]). Its wake-up is
    ///   then queued at the pause; no other event may be due then, so
    ///   that it is handled first at that instant, as in the run from the
    ///   start.
    ///
    /// [`Timeline::can_become`]: crate::model::faults::Timeline::can_become
    /// [`Timeline::can_continue_as`]: crate::model::faults::Timeline::can_continue_as
    fn swaps(&self, paused: &Sim<'_>, scenario: &Scenario) -> Option<Vec<(usize, Timeline, bool)>> {
        let crowded = paused.q.peek_time() == Some(self.until);
        let mut swaps = Vec::new();
        for (k, tier) in paused.tiers.iter().enumerate() {
            let next = timeline_of(scenario.spec(), k);
            if let Some(wake) = takeover(&tier.timeline, &next, self.until, crowded)? {
                swaps.push((k, next, wake));
            }
        }
        Some(swaps)
    }

    /// Whether [`Paused::resume`] would go on from here for policy
    /// `policy_index` of `scenario`, replication `replication` (its stop
    /// check aside): to choose where a run starts.
    pub fn resumes(&self, scenario: &Scenario, policy_index: usize, replication: u32) -> bool {
        let Some(paused) = self.sim.as_deref() else {
            return false;
        };
        (policy_index, replication) == (self.policy_index, self.replication)
            && self.same_but_profile(scenario, policy_index)
            && self.swaps(paused, scenario).is_some()
    }

    /// Whether this run, carried on by [`Paused::continue_to`] with its
    /// timelines cut before `from` and paused at `at`, could go on as
    /// `scenario`'s run as far as the faults and actions tell (the rest
    /// is [`Paused::resumes`]'s): to simulate the shared part only as far
    /// as some run needs it.
    pub fn may_part_at(&self, from: Nanos, scenario: &Scenario, at: Nanos) -> bool {
        let Some(paused) = self.sim.as_deref() else {
            return false;
        };
        paused.tiers.iter().enumerate().all(|(k, tier)| {
            let cut = tier.timeline.truncated(from);
            takeover(&cut, &timeline_of(scenario.spec(), k), at, false).is_some()
        })
    }

    /// This run, its timelines cut before `from` (see
    /// [`Timeline::truncated`]), carried on and paused before each of
    /// `untils` (ascending, after this pause): the shared part of runs
    /// that make the same changes up to `from` and part later, each at
    /// its own next edge. A run that ends before a pause gives an empty
    /// one (`resume` declines it).
    ///
    /// [`Timeline::truncated`]: crate::model::faults::Timeline::truncated
    pub fn continue_to(&self, from: Nanos, untils: &[Nanos]) -> Result<Vec<Paused<'a>>, RunError> {
        let mut sim = self.sim.as_deref().map(|s| {
            let mut s = Box::new(s.clone());
            for tier in s.tiers.iter_mut() {
                tier.timeline = tier.timeline.truncated(from);
            }
            s
        });
        let mut pauses = Vec::with_capacity(untils.len());
        for &until in untils {
            sim = match sim {
                Some(s) if until > self.until => {
                    let ran = drive(
                        self.scenario,
                        self.policy_index,
                        self.replication,
                        Begin::From(s),
                        None,
                        until,
                        0,
                    )?;
                    match ran {
                        Ran::Paused(s) => Some(s),
                        Ran::Ended(..) => None,
                    }
                }
                _ => None,
            };
            pauses.push(Paused {
                sim: sim.as_ref().map(|s| Box::new((**s).clone())),
                scenario: self.scenario,
                rest: self.rest.clone(),
                policy_index: self.policy_index,
                replication: self.replication,
                until,
            });
        }
        Ok(pauses)
    }

    /// Whether `scenario` and policy `policy_index` of it are the paused
    /// run's, apart from what [`rest_of`] leaves out.
    fn same_but_profile(&self, scenario: &Scenario, policy_index: usize) -> bool {
        let (a, b) = (self.scenario, scenario);
        a.policies().get(policy_index) == b.policies().get(policy_index)
            && a.tier_policies(policy_index) == b.tier_policies(policy_index)
            && self.rest == rest_of(b)
    }
}

/// How a run that holds timeline `held` and is paused at `until` takes on
/// `next` ([`Paused::swaps`]'s rules, one tier): `Some(None)` keeps its
/// own (the same plan), `Some(Some(wake))` takes `next`, queuing its
/// wake-up at the pause when `wake`; `None` cannot. `crowded`: another
/// event is due at the pause, so a wake-up queued then would not come
/// first at that instant.
fn takeover(held: &Timeline, next: &Timeline, until: Nanos, crowded: bool) -> Option<Option<bool>> {
    if held.same_plan(next) {
        Some(None)
    } else if held.can_become(next, until) {
        Some(Some(false))
    } else if !crowded && held.can_continue_as(next, until) {
        Some(Some(true))
    } else {
        None
    }
}

/// `scenario` as JSON, without what a resumed run may change under the
/// module's rules: its traffic profile, its faults and its actions.
fn rest_of(scenario: &Scenario) -> serde_json::Value {
    let mut v = without_faults(scenario);
    if let Some(t) = v.get_mut("traffic").and_then(|t| t.as_object_mut()) {
        t.remove("profile");
    }
    v
}

/// `scenario` as JSON, without its faults and actions.
fn without_faults(scenario: &Scenario) -> serde_json::Value {
    let mut v = serde_json::to_value(scenario.spec()).expect("a scenario serializes");
    if let Some(top) = v.as_object_mut() {
        top.remove("faults");
        top.remove("actions");
    }
    v
}

/// A key under which runs of scenarios may share their first part: two
/// scenarios with the same key differ at most in their faults and
/// actions, so a run of one paused before the first fault or action edge
/// of both ([`first_edge`]) goes on as the other's when their first edges
/// coincide (see the module's rules; `resume` checks them all).
pub fn sharing_key(scenario: &Scenario) -> String {
    without_faults(scenario).to_string()
}

/// The first instant at which a fault or an action of `spec` starts or
/// ends, on any tier: runs of scenarios with the same [`sharing_key`] are
/// the same run before it. `None` without faults or actions.
pub fn first_edge(spec: &ScenarioSpec) -> Option<Nanos> {
    next_edge(spec, 0)
}

/// The first fault or action edge of `spec` at or after `at`, on any
/// tier: where a run that shares its part up to there with others parts
/// from them ([`Paused::continue_to`]).
pub fn next_edge(spec: &ScenarioSpec, at: Nanos) -> Option<Nanos> {
    (0..=spec.downstream.len())
        .filter_map(|k| timeline_of(spec, k).next_edge(at))
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::BinRow;
    use crate::model::run::{simulate, simulate_until};
    use crate::time::NS_PER_SEC;

    /// The HotOS '21 toy, shortened, with a network, many clients, a
    /// jittered retrying policy and a budgeted one; the traffic steps to
    /// `scale` × the rate 1 s after the stall ends at 40 s, as `assess`'s
    /// sustaining probes do. `extra` is spliced into the scenario.
    fn toy(scale: &str, extra: &str) -> Scenario {
        Scenario::from_json(&format!(
            r#"{{"name": "toy", "seed": 7, "duration": "90s", "bin": "1s"{extra},
                "traffic": {{"rate": 280, "clients": 50, "attempt_timeout": "1s",
                    "network_delay": {{"exponential": {{"mean": "2ms"}}}},
                    "profile": [{{"at": "40s", "scale": 1}}, {{"at": "41s", "scale": {scale}}}]}},
                "backend": {{"workers": 30, "service_time": {{"exponential": {{"mean": "100ms"}}}},
                    "queue_limit": 600}},
                "faults": [{{"capacity": {{"start": "30s", "duration": "10s", "workers": 0}}}}],
                "policies": [
                    {{"name": "jittered", "max_attempts": 3, "jitter": "full",
                      "backoff": {{"exponential": {{"initial": "50ms", "multiplier": 2, "max": "1s"}}}},
                      "retry_on": ["unavailable", "deadline_exceeded"]}},
                    {{"name": "budgeted", "max_attempts": 2,
                      "backoff": {{"constant": {{"delay": "0s"}}}},
                      "retry_on": ["unavailable", "deadline_exceeded"],
                      "budget": {{"token_bucket": {{"max_tokens": 100, "token_ratio": 0.1, "scope": "global"}}}}}}],
                "report": {{"recovery_threshold": 0.8, "stable_for": "5s"}}}}"#
        ))
        .unwrap()
    }

    const PAUSE: Nanos = 40 * NS_PER_SEC;

    #[test]
    fn a_resumed_run_is_the_run_of_its_scenario_from_the_start() {
        let shared = toy("1", "");
        for policy in 0..2 {
            for rep in 0..2 {
                let paused = simulate_to(&shared, policy, rep, PAUSE).unwrap();
                for scale in ["0.3", "1", "1.7"] {
                    let probe = toy(scale, "");
                    let resumed = paused.resume(&probe, policy, rep, None).unwrap();
                    let fresh = simulate(&probe, policy, rep).unwrap();
                    assert_eq!(resumed, Some(fresh), "policy {policy} rep {rep} × {scale}");
                }
            }
        }
    }

    #[test]
    fn a_resumed_run_stops_where_the_run_from_the_start_stops() {
        // Stops once 5 healthy bins follow the stall, as a search's runs do.
        let check = |p: &Progress<'_>| {
            let bins = p.bins;
            let healthy =
                |b: &BinRow| b.t_s >= 40.0 && b.goodput_rps >= 0.8 * b.demand_rps.max(1.0);
            bins.len() >= 5 && bins[bins.len() - 5..].iter().all(healthy)
        };
        let shared = toy("1", "");
        let paused = simulate_to(&shared, 0, 0, PAUSE).unwrap();
        // At 0.3 × the load it recovers and stops; at 1.7 × it never does.
        for (scale, stops) in [("0.3", true), ("1.7", false)] {
            let probe = toy(scale, "");
            let (mut a, mut b) = (check, check);
            let resumed = paused.resume(&probe, 0, 0, Some(&mut a)).unwrap();
            let fresh = simulate_until(&probe, 0, 0, Some(&mut b)).unwrap();
            assert_eq!(fresh.tiers[0].bins.len() < 90, stops, "× {scale}");
            assert_eq!(resumed, Some(fresh), "× {scale}");
        }
    }

    /// The toy of [`toy`] with its stall replaced by `fault`.
    fn toy_with_fault(fault: &str) -> Scenario {
        let json = serde_json::to_string(toy("1", "").spec()).unwrap();
        let mut v: serde_json::Value = serde_json::from_str(&json).unwrap();
        v["faults"] = serde_json::from_str(fault).unwrap();
        Scenario::from_json(&v.to_string()).unwrap()
    }

    #[test]
    fn a_run_paused_before_its_fault_goes_on_under_another_length_or_size() {
        const FAULT_START: Nanos = 30 * NS_PER_SEC;
        let stall = |length: &str, workers: u32| {
            toy_with_fault(&format!(
                r#"[{{"capacity": {{"start": "30s", "duration": "{length}", "workers": {workers}}}}}]"#
            ))
        };
        let shared = stall("10s", 0);
        for policy in 0..2 {
            let paused = simulate_to(&shared, policy, 1, FAULT_START).unwrap();
            for (length, workers) in [("2s", 0), ("10s", 0), ("25s", 3), ("45s", 0)] {
                let cell = stall(length, workers);
                let resumed = paused.resume(&cell, policy, 1, None).unwrap();
                let fresh = simulate(&cell, policy, 1).unwrap();
                assert_eq!(
                    resumed,
                    Some(fresh),
                    "policy {policy}, {length} × {workers}"
                );
            }
            // An outage with its own actions in place of the stall, from
            // the same instant: another kind of fault, the same first edge.
            let outage = toy_with_fault(r#"[{"outage": {"start": "30s", "duration": "8s"}}]"#);
            let resumed = paused.resume(&outage, policy, 1, None).unwrap();
            assert_eq!(resumed, Some(simulate(&outage, policy, 1).unwrap()));
        }
        // A fault that starts at another time, or one paused after the
        // fault began, cannot go on: the run's queued wake-up is wrong or
        // the fault has already acted.
        let paused = simulate_to(&shared, 0, 1, FAULT_START).unwrap();
        let later =
            toy_with_fault(r#"[{"capacity": {"start": "31s", "duration": "10s", "workers": 0}}]"#);
        assert_eq!(paused.resume(&later, 0, 1, None).unwrap(), None);
        let none = toy_with_fault("[]");
        assert_eq!(paused.resume(&none, 0, 1, None).unwrap(), None);
        let inside = simulate_to(&shared, 0, 1, FAULT_START + 1).unwrap();
        assert_eq!(inside.resume(&stall("20s", 0), 0, 1, None).unwrap(), None);
        assert!(inside.resume(&shared, 0, 1, None).unwrap().is_some());
    }

    /// A shorter stall is the longer stall's run up to its own end: the
    /// shared part carried on through the stall's start with no end
    /// queued, paused at each stall's end, goes on as each stall's run.
    #[test]
    fn a_stall_goes_on_from_a_longer_stalls_run_at_its_end() {
        const START: Nanos = 30 * NS_PER_SEC;
        let stall = |secs: u64, workers: u32| {
            toy_with_fault(&format!(
                r#"[{{"capacity": {{"start": "30s", "duration": "{secs}s", "workers": {workers}}}}}]"#
            ))
        };
        let longest = stall(45, 0);
        for policy in 0..2 {
            let paused = simulate_to(&longest, policy, 1, START).unwrap();
            let lengths = [2, 10, 45];
            let ends: Vec<Nanos> = lengths.iter().map(|s| START + s * NS_PER_SEC).collect();
            let chain = paused.continue_to(START + 1, &ends).unwrap();
            for (&secs, part) in lengths.iter().zip(&chain) {
                let cell = stall(secs, 0);
                assert!(part.resumes(&cell, policy, 1), "{secs} s");
                let resumed = part.resume(&cell, policy, 1, None).unwrap();
                let fresh = simulate(&cell, policy, 1).unwrap();
                assert_eq!(resumed, Some(fresh), "policy {policy}, {secs} s");
            }
            // Another size changes the run at the stall's start; another
            // length parts elsewhere; none goes on from there.
            assert!(!chain[0].resumes(&stall(2, 3), policy, 1));
            assert!(!chain[0].resumes(&stall(10, 0), policy, 1));
            assert!(!chain[1].resumes(&stall(2, 0), policy, 1));
            // Another event due at the pause would come before the stall's
            // end there, not after it as in the run from the start.
            let part = &chain[0];
            let crowded = Paused {
                sim: part.sim.as_ref().map(|s| {
                    let mut s = s.clone();
                    s.q.schedule_at(part.until, Ev::DispatchTick);
                    s
                }),
                rest: part.rest.clone(),
                ..*part
            };
            assert!(!crowded.resumes(&stall(2, 0), policy, 1));
        }
    }

    #[test]
    fn a_run_that_cannot_go_on_from_the_pause_is_declined() {
        let shared = toy("1", "");
        let paused = simulate_to(&shared, 0, 0, PAUSE).unwrap();
        let probe = toy("1.7", "");
        // Another replication or policy, another field, a profile that
        // parts before the pause.
        assert_eq!(paused.resume(&probe, 0, 1, None).unwrap(), None);
        assert_eq!(paused.resume(&probe, 1, 0, None).unwrap(), None);
        let warm = toy("1.7", r#", "warmup": "5s""#);
        assert_eq!(paused.resume(&warm, 0, 0, None).unwrap(), None);
        let early_step = Scenario::from_json(
            &serde_json::to_string(probe.spec())
                .unwrap()
                .replace(r#""at":"41s""#, r#""at":"39s""#)
                .replace(r#""at":"40s""#, r#""at":"20s""#),
        )
        .unwrap();
        assert_ne!(
            early_step.spec().traffic.profile,
            probe.spec().traffic.profile
        );
        assert_eq!(paused.resume(&early_step, 0, 0, None).unwrap(), None);
        // A stop check that would have ended the run before the pause.
        let mut stops_at_once = |_: &Progress<'_>| true;
        assert_eq!(
            paused
                .resume(&probe, 0, 0, Some(&mut stops_at_once))
                .unwrap(),
            None
        );
        // The same probe goes on from the pause.
        assert!(paused.resume(&probe, 0, 0, None).unwrap().is_some());
    }
}
