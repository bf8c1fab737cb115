//! `retrysim assess`: a verdict per policy on how close a scenario runs to
//! its cliff.
//!
//! For every policy:
//!
//! 1. **The trigger threshold**: the largest value of a load parameter
//!    (`traffic.rate` unless told otherwise) at which the scenario, with its
//!    own fault, still recovers in at least half of the replications,
//!    found by bisection ([`bisect`]) and reported as an interval, with the
//!    margin from the scenario's own load.
//! 2. **The sustaining load**: the same search where only the load *after*
//!    the fault changes (the scenario's rate holds until the fault ends,
//!    then the traffic steps to the load tried): the load below which a
//!    storm the fault started dies out. Open traffic only, without a
//!    `traffic.trace`; the scenario's own traffic profile is replaced by
//!    that step.
//! 3. **The analytic estimate** of that sustaining load ([`analytic`]).
//! 4. **The worst-case amplification** in closed form ([`bounds`]) and
//!    checked by simulating the scenario with an outage over the whole run
//!    (one replication, no runbook actions). The run is shortened to what
//!    the check needs when every request's attempts end within a known
//!    time ([`worst_case_end`]), and then counts the requests that ended.
//! 5. **The retry window** from `crate::policy::schedule`.
//!
//! **What "recovers" means.** A probe's run recovers when goodput is back
//! above the scenario's `recovery_threshold` for `stable_for` within
//! [`Options::recover_within`] of the fault's end ([`DEFAULT_RECOVER_WITHIN`]
//! unless told; see `map::outcome::outcome_within`). A storm that outlasts
//! that and dies out later (because the traffic falls, say) is not a
//! recovery.
//!
//! **Runs.** Every probe is a set of runs through
//! `runner::early::run_jobs_until`, each ending as soon as its outcome is
//! decided (recovered and held, or the deadline passed without it), with
//! the same replication indices at every load: common random numbers, so
//! two probes differ by their load only, and the assessment is
//! deterministic on any thread count. The worst-case runs are full runs.
//! A policy's sustaining probes are one run until the fault ends: each
//! replication's part up to then is simulated once, by the first probe,
//! and the later probes go on from copies of it (`model::run::resume`),
//! which are exactly their own runs.

pub mod analytic;
pub mod bisect;
pub use crate::policy::bounds;

use crate::decimal::num;
use crate::map::outcome::{outcome_within, Outcome};
use crate::map::value_at;
use crate::metrics::{RunResult, RunSummary};
use crate::model::run::Paused;
use crate::policy::Policy;
use crate::runner::early::{run_jobs_until, Question, Start, Work};
use crate::runner::{self, RunError};
use crate::scenario::spec::{incident, Mode, ScenarioSpec};
use crate::scenario::Scenario;
use crate::status::Status;
use crate::time::{format_duration, secs, Nanos, NS_PER_SEC};
use analytic::StormEstimate;
use bisect::{Bisection, Interval, Probe};
use bounds::Bound;
use std::cell::{Cell, RefCell};
use std::sync::Arc;

/// Where doubling a rate stops, as a multiple of the capacity.
const CEILING: f64 = 1.1;

/// How long after the fault's end a run may take to recover, unless told
/// (`--recover-within`): one minute.
pub const DEFAULT_RECOVER_WITHIN: Nanos = 60 * NS_PER_SEC;

/// What to assess and how carefully.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// The dotted path of the load parameter.
    pub load_path: String,
    /// Replications per probe.
    pub replications: u32,
    /// Relative width at which a bisection stops.
    pub tolerance: f64,
    /// A run recovers when it does within this long after the fault's
    /// end; `None`: at any time before the run's end.
    pub recover_within: Option<Nanos>,
}

impl Default for Options {
    /// `traffic.rate`, 3 replications, 2 %, [`DEFAULT_RECOVER_WITHIN`]:
    /// the command line's defaults.
    fn default() -> Options {
        Options {
            load_path: "traffic.rate".to_string(),
            replications: 3,
            tolerance: 0.02,
            recover_within: Some(DEFAULT_RECOVER_WITHIN),
        }
    }
}

/// One policy's verdict.
#[derive(Clone, Debug, PartialEq)]
pub struct PolicyVerdict {
    /// The policy's name.
    pub name: String,
    /// The trigger threshold of the load parameter.
    pub threshold: Interval,
    /// The band of loads where the threshold probes' outcomes are mixed
    /// (see [`bisect::mixed_band`]); equal to `threshold` when they are
    /// not.
    pub threshold_band: Interval,
    /// Its probes, in order.
    pub threshold_probes: Vec<Probe>,
    /// The load (requests/s) below which a started storm dies out; `None`
    /// when traffic is not open, or comes from a trace.
    pub sustaining: Option<Interval>,
    /// Its probes.
    pub sustaining_probes: Vec<Probe>,
    /// The band where the sustaining probes' outcomes are mixed.
    pub sustaining_band: Option<Interval>,
    /// The back-of-envelope sustaining load.
    pub analytic: StormEstimate,
    /// The worst-case amplification in closed form.
    pub bound: Bound,
    /// Attempts per request under an outage over the whole worst-case run
    /// ([`worst_case_end`]), simulated: attempts ÷ requests, or, when that
    /// run was shortened, the attempts of the requests that ended ÷ their
    /// number.
    pub simulated_amplification: f64,
    /// The figure's N: the requests of that simulation, or those that
    /// ended (`requests_ended`).
    pub requests: u64,
    /// Whether the figure counts only the requests that ended (a
    /// shortened run).
    pub requests_ended: bool,
    /// How long that simulation's outage lasted (s): the scenario's whole
    /// run, or less when every request's attempts end within a known time
    /// ([`worst_case_end`]).
    pub worst_outage_s: f64,
    /// Retries the policy's own limits allow; `None` = unlimited.
    pub retries_allowed: Option<u64>,
    /// Sum of the nominal delays over those retries (s).
    pub retry_window_s: Option<f64>,
}

/// The whole assessment.
#[derive(Clone, Debug, PartialEq)]
pub struct Assessment {
    /// The scenario's name.
    pub scenario: String,
    /// The load parameter's path.
    pub load_path: String,
    /// The scenario's own value of it.
    pub own_load: f64,
    /// The scenario's own request rate, when it has one (the sustaining
    /// load's unit).
    pub own_rate: Option<f64>,
    /// Replications per probe.
    pub replications: u32,
    /// The recovery deadline the probes were judged by.
    pub recover_within: Option<Nanos>,
    /// One verdict per policy, in scenario order.
    pub policies: Vec<PolicyVerdict>,
    /// Runs simulated in all.
    pub runs: u64,
}

/// One set of runs in a batch: a policy, the `--set` assignments that
/// make its scenario, how many replications, and whether its runs stop
/// once their outcome is decided (a probe) or go to the end (the worst
/// case).
struct Item {
    policy: usize,
    sets: Vec<String>,
    reps: u32,
    early: bool,
    /// A sustaining probe: its runs are the same until the fault ends as
    /// every other sustaining probe's of the policy.
    sustaining: bool,
}

/// Writes a load for `--set`: whole numbers without a point.
fn load_text(x: f64, whole: bool) -> String {
    if whole {
        format!("{}", x.round() as i64)
    } else {
        num(x)
    }
}

/// Share of recovered runs of `s` among those judged (see
/// `map::outcome::outcome_within`).
fn share(s: &Scenario, runs: &[RunResult], within: Option<Nanos>) -> Option<f64> {
    let (mut rec, mut judged) = (0u32, 0u32);
    for r in runs {
        match outcome_within(r.summary(), s.spec(), within) {
            Outcome::Recovered(_) => {
                rec += 1;
                judged += 1;
            }
            Outcome::Degraded => judged += 1,
            Outcome::Undetermined => {}
        }
    }
    (judged > 0).then(|| f64::from(rec) / f64::from(judged))
}

/// Whether `path` names a load `assess` can search: a field that brings
/// more work as it grows (`traffic.rate`, `traffic.clients`, the `scale`
/// of a `traffic.profile` knot). The search raises it until the scenario
/// stops recovering, so a capacity (`backend.workers`), a delay or the
/// seed would be searched backwards or make no sense.
pub fn is_load_path(path: &str) -> bool {
    let Ok(segments) = crate::scenario::path_segments(path.trim()) else {
        return false;
    };
    match segments.as_slice() {
        ["traffic", "rate" | "clients"] => true,
        ["traffic", "profile", knot, "scale"] => knot.parse::<usize>().is_ok(),
        _ => false,
    }
}

/// Assesses every policy of `base` (the scenario as the user gave it).
/// `load` loads the scenario with extra `--set` assignments applied after
/// the user's own (with the user's seed and policy selection); `on_runs`
/// is told how many runs each batch adds and `on_done` is called per run.
/// A run that cannot finish fails the assessment.
pub fn assess<E>(
    base: &Scenario,
    opts: &Options,
    load: &dyn Fn(&[String]) -> Result<Scenario, E>,
    on_runs: &dyn Fn(u64),
    on_done: &(dyn Fn() + Sync),
) -> Result<Assessment, E>
where
    E: From<AssessError> + From<RunError>,
{
    let plan = Plan::new(base, opts)?;
    let (worst_ends, worst_items) = plan.worst_items(load);
    let mut searches = plan.searches();
    let shared = plan.shared_scenarios(load)?;
    let batches = Batches {
        plan: &plan,
        load,
        shared: &shared,
        kept: RefCell::new((0..plan.policies.len()).map(|_| Vec::new()).collect()),
        on_runs,
        on_done,
        runs: Cell::new(0),
    };
    let worst = batches.search_all(&mut searches, worst_items)?;
    let policies = plan.verdicts(searches, &worst, &worst_ends);
    Ok(Assessment {
        scenario: plan.spec.name.clone(),
        load_path: opts.load_path.clone(),
        own_load: plan.own_load,
        own_rate: plan.own_rate,
        replications: plan.reps,
        recover_within: opts.recover_within,
        policies,
        runs: batches.runs.get(),
    })
}

/// The scenario's own value of the load parameter at `path`, which must
/// be a number above 0.
fn own_load(spec: &ScenarioSpec, path: &str) -> Result<f64, AssessError> {
    let json = serde_json::to_value(spec).expect("a scenario serializes");
    let found = value_at(&json, path);
    let own_load = found
        .as_deref()
        .and_then(|v| v.parse::<f64>().ok())
        .ok_or_else(|| AssessError::NotANumber {
            path: path.to_string(),
            found: found.clone().unwrap_or_else(|| "nothing".into()),
        })?;
    if own_load <= 0.0 {
        return Err(AssessError::NotPositive {
            path: path.to_string(),
            value: num(own_load),
        });
    }
    Ok(own_load)
}

/// The `--set` assignments of a worst-case run ending at `end`: an
/// outage over the whole run, no runbook actions.
fn worst_sets(end: Nanos) -> Vec<String> {
    vec![
        format!("duration={}", format_duration(end)),
        format!(
            "faults=[{{\"outage\": {{\"start\": \"0s\", \"duration\": \"{}\"}}}}]",
            format_duration(end)
        ),
        "actions=[]".to_string(),
    ]
}

/// What the assessment of one scenario reads of it and of the options,
/// once, for every step that makes its runs and reads them.
struct Plan<'a> {
    spec: &'a ScenarioSpec,
    opts: &'a Options,
    /// The scenario's policies, in order.
    policies: &'a [Policy],
    /// The scenario's own value of the load parameter.
    own_load: f64,
    /// Whether the load is searched in whole numbers.
    whole: bool,
    /// The scenario's own request rate, when the sustaining load is
    /// searched.
    own_rate: Option<f64>,
    /// The run's end (ns).
    run_end: Nanos,
    /// The fault's end (ns).
    fault_end: Nanos,
    /// Replications per probe.
    reps: u32,
}

impl<'a> Plan<'a> {
    /// The plan for `base`, or why it cannot be assessed.
    fn new(base: &'a Scenario, opts: &'a Options) -> Result<Plan<'a>, AssessError> {
        let spec = base.spec();
        let own_load = own_load(spec, &opts.load_path)?;
        let run_end = spec.duration.ns();
        let (_, fault_end) = incident(&spec.faults, run_end).ok_or(AssessError::NoTrigger)?;
        // The sustaining load: the rate steps to the load tried when the
        // fault ends.
        // Not under a trace: its series fixes the traffic's shape, which the
        // step would replace.
        let own_rate = match spec.traffic.mode {
            Mode::Open | Mode::Pool if spec.traffic.trace.is_none() => {
                spec.traffic.rate.filter(|r| *r > 0.0)
            }
            _ => None,
        };
        Ok(Plan {
            spec,
            opts,
            policies: base.policies(),
            own_load,
            // A load the scenario writes as a whole number is searched in
            // whole numbers.
            whole: own_load.fract() == 0.0,
            own_rate,
            run_end,
            fault_end,
            reps: opts.replications.max(1),
        })
    }

    /// When each policy's worst-case run ends, and its item: an outage
    /// over the whole run (as long as each policy needs, see
    /// `worst_case_end`), no runbook actions, one full run per policy.
    fn worst_items<E>(
        &self,
        load: &dyn Fn(&[String]) -> Result<Scenario, E>,
    ) -> (Vec<Nanos>, Vec<Item>) {
        let mut worst_ends = Vec::with_capacity(self.policies.len());
        let mut worst_items: Vec<Item> = Vec::with_capacity(self.policies.len());
        for (policy, p) in self.policies.iter().enumerate() {
            let mut end = worst_case_end(self.spec, p);
            // A shorter run that the scenario does not allow (a downstream
            // fault after its end, say) falls back to the whole run.
            if end < self.run_end && load(&worst_sets(end)).is_err() {
                end = self.run_end;
            }
            worst_ends.push(end);
            worst_items.push(Item {
                policy,
                sets: worst_sets(end),
                reps: 1,
                early: false,
                sustaining: false,
            });
        }
        (worst_ends, worst_items)
    }

    /// Every search, not yet started: each policy's threshold search, in
    /// policy order, then (with a rate of its own) each one's sustaining
    /// search.
    fn searches(&self) -> Vec<Bisection> {
        let (spec, opts) = (self.spec, self.opts);
        // The trigger threshold. A rate above the capacity never recovers
        // (it is not healthy even before the fault), so doubling a
        // constant rate stops just above it.
        let capacity = analytic::capacity_rps(spec);
        let above_capacity = capacity.map(|c| c * CEILING);
        let rate_ceiling = (opts.load_path == "traffic.rate")
            .then(|| rate_ceiling(spec, above_capacity?, self.fault_end, opts.recover_within))
            .flatten();
        let mut searches: Vec<Bisection> = self
            .policies
            .iter()
            .map(|_| {
                Bisection::new(self.own_load, self.whole, opts.tolerance).with_ceiling(rate_ceiling)
            })
            .collect();
        if let Some(rate) = self.own_rate {
            let rate_whole = rate.fract() == 0.0;
            searches.extend(self.policies.iter().map(|_| {
                Bisection::new(rate, rate_whole, opts.tolerance).with_ceiling(above_capacity)
            }));
        }
        searches
    }

    /// The item that probes search `i` at load `x`. Search `i` < the
    /// policy count is policy `i`'s threshold search; above, the
    /// sustaining search of policy `i` − the count.
    fn probe(&self, i: usize, x: f64) -> Item {
        let n = self.policies.len();
        let sets = if i < n {
            format!("{}={}", self.opts.load_path, load_text(x, self.whole))
        } else {
            let fault_end = self.fault_end;
            let step_at = format_duration(fault_end);
            let step_end =
                format_duration(fault_end + NS_PER_SEC.min(self.run_end - fault_end).max(1));
            let scale = num(x / self.own_rate.expect("a sustaining search has a rate"));
            format!(
                "traffic.profile=[{{\"at\": \"{step_at}\", \"scale\": 1}}, {{\"at\": \"{step_end}\", \"scale\": {scale}}}]"
            )
        };
        Item {
            policy: i % n,
            sets: vec![sets],
            reps: self.reps,
            early: true,
            sustaining: i >= n,
        }
    }

    /// The scenario of `policy` alone, with `sets` applied.
    fn policy_scenario<E>(
        &self,
        load: &dyn Fn(&[String]) -> Result<Scenario, E>,
        sets: &[String],
        policy: usize,
    ) -> Result<Scenario, E> {
        let mut s = load(sets)?;
        s.select_policies(std::slice::from_ref(&self.policies[policy].name))
            .expect("the policy is in the scenario");
        Ok(s)
    }

    /// The scenario each policy's sustaining runs share until the fault
    /// ends (that of any of its probes); none without sustaining
    /// searches.
    fn shared_scenarios<E>(
        &self,
        load: &dyn Fn(&[String]) -> Result<Scenario, E>,
    ) -> Result<Vec<Scenario>, E> {
        let n = self.policies.len();
        match self.own_rate {
            Some(rate) => (0..n)
                .map(|p| self.policy_scenario(load, &self.probe(n + p, rate).sets, p))
                .collect(),
            None => Ok(Vec::new()),
        }
    }

    /// Every policy's verdict, from its searches (all over, in the order
    /// of [`Plan::searches`]) and its worst-case run (`worst`, ended at
    /// `worst_ends`).
    fn verdicts(
        &self,
        mut searches: Vec<Bisection>,
        worst: &[(Scenario, Vec<RunResult>)],
        worst_ends: &[Nanos],
    ) -> Vec<PolicyVerdict> {
        let n = self.policies.len();
        let mut sustaining: Vec<Option<Bisection>> =
            searches.split_off(n).into_iter().map(Some).collect();
        sustaining.resize_with(n, || None);
        let mut policies = Vec::with_capacity(n);
        for p in 0..n {
            let (_, worst_runs) = &worst[p];
            let worst = WorstRun {
                summary: worst_runs[0].summary(),
                end: worst_ends[p],
            };
            policies.push(self.verdict(p, worst, &searches[p], sustaining[p].take()));
        }
        policies
    }

    /// Policy `p`'s verdict from its threshold search, its sustaining
    /// search (if any) and its worst-case run.
    fn verdict(
        &self,
        p: usize,
        worst: WorstRun<'_>,
        threshold: &Bisection,
        sustaining: Option<Bisection>,
    ) -> PolicyVerdict {
        let (spec, policy) = (self.spec, &self.policies[p]);
        let summary = worst.summary;
        let counted_s = secs(worst.end.saturating_sub(spec.warmup.ns())).max(1e-9);
        let shortened = worst.end < self.run_end;
        let (counted, attempts) = worst.counted(shortened);
        let ctx = bounds::Context {
            failure: Status::Unavailable,
            timeouts: false,
            deadline: spec.traffic.deadline.map(|d| d.ns()),
            requests: summary.requests as f64,
            counted_s,
            clients: spec.traffic.clients,
        };
        let sched = policy.schedule(Some(0));
        let (sp, sband, sprobes) = match sustaining {
            Some(b) => (
                Some(b.interval),
                Some(bisect::mixed_band(&b.probes, b.interval)),
                b.probes,
            ),
            None => (None, None, Vec::new()),
        };
        PolicyVerdict {
            name: policy.name.clone(),
            threshold: threshold.interval,
            threshold_band: bisect::mixed_band(&threshold.probes, threshold.interval),
            threshold_probes: threshold.probes.clone(),
            sustaining: sp,
            sustaining_probes: sprobes,
            sustaining_band: sband,
            analytic: analytic::estimate(spec, policy, &ctx),
            bound: policy.worst_case(&ctx),
            simulated_amplification: if counted == 0 {
                0.0
            } else {
                attempts as f64 / counted as f64
            },
            requests: counted,
            requests_ended: shortened,
            worst_outage_s: secs(worst.end),
            retries_allowed: sched.retries,
            retry_window_s: sched.window.map(secs),
        }
    }
}

/// A policy's worst-case run: its figures, and when it ended (ns).
struct WorstRun<'r> {
    summary: &'r RunSummary,
    end: Nanos,
}

impl WorstRun<'_> {
    /// The requests the amplification counts and their attempts.
    fn counted(&self, shortened: bool) -> (u64, u64) {
        let summary = self.summary;
        // A shortened run counts the requests that ended, each of which
        // went through its whole schedule (those still open at the end are
        // part-way through it); a whole run counts every request, as some
        // may never end within it.
        if shortened {
            summary
                .attempt_entries()
                .fold((0u64, 0u64), |(n, a), (k, [ok, gave_up])| {
                    (n + ok + gave_up, a + k as u64 * (ok + gave_up))
                })
        } else {
            (summary.requests, summary.attempts)
        }
    }
}

/// The runs of an assessment: each batch of items is run in one fan-out,
/// and the part each policy's sustaining probes share is kept for the
/// later ones.
struct Batches<'a, E> {
    plan: &'a Plan<'a>,
    load: &'a dyn Fn(&[String]) -> Result<Scenario, E>,
    /// The scenario each policy's sustaining runs share until the fault
    /// ends ([`Plan::shared_scenarios`]).
    shared: &'a [Scenario],
    /// The sustaining probes of a policy differ only once the fault ends,
    /// where the traffic steps to the load tried: each replication's part
    /// before that is simulated once, by the policy's first sustaining
    /// probe, from `shared`'s scenario (any of them), and kept here, per
    /// policy and replication; the later probes go on from copies of it
    /// (`model::run::resume`), which are exactly their own runs.
    kept: RefCell<Vec<Vec<Arc<Paused<'a>>>>>,
    on_runs: &'a dyn Fn(u64),
    on_done: &'a (dyn Fn() + Sync),
    /// Runs simulated so far.
    runs: Cell<u64>,
}

impl<'a, E> Batches<'a, E>
where
    E: From<RunError>,
{
    /// Runs every search to its end, with the worst-case runs
    /// (`worst_items`) in its first batch, and returns those runs'
    /// scenarios and results, in policy order.
    fn search_all(
        &self,
        searches: &mut [Bisection],
        worst_items: Vec<Item>,
    ) -> Result<Vec<(Scenario, Vec<RunResult>)>, E> {
        // Every search advances at once, one batch per step, and the first
        // batch carries the worst-case runs too: the fewer and fuller the
        // batches, the less a core waits for the slowest run of one. No
        // outcome depends on which batch ran it.
        let mut pending_worst = Some(worst_items);
        let mut worst: Vec<(Scenario, Vec<RunResult>)> = Vec::new();
        let mut failed: Option<E> = None;
        bisect::run_all(searches, &mut |probes| {
            let mut items = pending_worst.take().unwrap_or_default();
            let carried = items.len();
            items.extend(probes.iter().map(|&(i, x)| self.plan.probe(i, x)));
            match self.run(&items) {
                Ok(mut done) => {
                    let probed = done.split_off(carried);
                    worst.extend(done);
                    Some(
                        probed
                            .iter()
                            .map(|(s, r)| share(s, r, self.plan.opts.recover_within))
                            .collect(),
                    )
                }
                Err(e) => {
                    failed.get_or_insert(e);
                    None
                }
            }
        });
        if let Some(e) = failed {
            return Err(e);
        }
        if let Some(items) = pending_worst {
            worst = self.run(&items)?;
        }
        Ok(worst)
    }

    /// Runs each item (a policy, extra sets, replications, and whether its
    /// runs stop once their outcome is decided) and returns each one's
    /// scenario and results; all in one fan-out.
    fn run(&self, items: &[Item]) -> Result<Vec<(Scenario, Vec<RunResult>)>, E> {
        let mut scenarios = Vec::with_capacity(items.len());
        for item in items {
            scenarios.push(
                self.plan
                    .policy_scenario(self.load, &item.sets, item.policy)?,
            );
        }
        let work = self.work(&scenarios, items);
        (self.on_runs)(work.len() as u64);
        self.runs.set(self.runs.get() + work.len() as u64);
        let question = Question {
            recover_within: self.plan.opts.recover_within,
        };
        let mut done = run_jobs_until(&work, question, None, self.on_done)?.into_iter();
        let mut kept = self.kept.borrow_mut();
        Ok(scenarios
            .into_iter()
            .zip(items)
            .map(|(s, item)| {
                let mine = done
                    .by_ref()
                    .take(item.reps as usize)
                    .map(|(res, paused)| {
                        kept[item.policy].extend(paused);
                        res
                    })
                    .collect();
                (s, mine)
            })
            .collect())
    }

    /// The runs of `items` (of `scenarios`, one each), each starting
    /// where it can: a sustaining probe's run from the part its policy
    /// kept, or, for the policy's first one, keeping that part.
    fn work<'s>(&self, scenarios: &'s [Scenario], items: &[Item]) -> Vec<Work<'s, 'a>> {
        let kept = self.kept.borrow();
        let mut work = Vec::new();
        for (s, item) in scenarios.iter().zip(items) {
            let p = item.policy;
            let mine = &kept[p];
            let keep = item.sustaining && mine.is_empty() && !self.shared.is_empty();
            work.extend(runner::jobs_of(s, item.reps).into_iter().map(|job| {
                let rep = job.replication as usize;
                let start = match mine.get(rep) {
                    Some(paused) if item.sustaining => Start::Resume(Arc::clone(paused)),
                    _ if keep => Start::Keep(&self.shared[p], self.plan.fault_end),
                    _ => Start::Fresh,
                };
                Work {
                    job,
                    early: item.early,
                    start,
                }
            }));
        }
        work
    }
}

/// When a policy's worst-case run ends (ns): the scenario's end, unless
/// every request's attempts are over within a known time `T` and nothing
/// one request does changes another's attempts (no budget, breaker, rate
/// limiter, hedging or reconnection backoff, no queue dispatcher or pool
/// of client threads). Then the warm-up plus
/// max(1 min, 20 × `T`) is as good a check and much cheaper: the figure
/// is per request that ended, and each ended request went through its
/// whole schedule. `T` is the deadline, or else the schedule's longest
/// retry window plus an attempt timeout per attempt, plus 1 s.
pub fn worst_case_end(spec: &ScenarioSpec, policy: &Policy) -> Nanos {
    let run_end = spec.duration.ns();
    // A queue's dispatcher or a pool of client threads holds requests
    // back for a time no schedule bounds.
    if spec.dispatcher.is_some()
        || spec.traffic.threads.is_some()
        || policy.bounds_retries_per_run()
        || policy.rate_limiter.is_some()
        || policy.hedging.is_some()
        || policy.reconnect.is_some()
    {
        return run_end;
    }
    let lifetime = spec.traffic.deadline.map(|d| d.ns()).or_else(|| {
        let sched = policy.schedule(Some(0));
        let attempts = sched.retries?.saturating_add(1);
        let timeout = spec.traffic.attempt_timeout.map_or(0, |t| t.ns());
        sched
            .window_max?
            .checked_add(timeout.checked_mul(attempts)?)?
            .checked_add(NS_PER_SEC)
    });
    let Some(t) = lifetime else {
        return run_end;
    };
    let span = t.saturating_mul(20).max(60 * NS_PER_SEC);
    spec.warmup.ns().saturating_add(span).min(run_end)
}

/// The `traffic.rate` above which a run cannot recover: one whose traffic
/// stays above `above_capacity` (1.1 × the capacity) from the fault's end
/// (`fault_end`, ns) to the time the outcome is decided. With a constant
/// rate that is `above_capacity` itself; under a profile, it is divided by
/// the profile's lowest scale in that window, which only a recovery
/// deadline (`within`) bounds (`None` without one: the traffic may fall
/// later and let any rate recover).
fn rate_ceiling(
    spec: &crate::scenario::spec::ScenarioSpec,
    above_capacity: f64,
    fault_end: Nanos,
    within: Option<Nanos>,
) -> Option<f64> {
    let knots = &spec.traffic.profile;
    if knots.is_empty() {
        return Some(above_capacity);
    }
    let horizon = crate::runner::early::horizon_s(spec, within?)?;
    let from = secs(fault_end);
    let profile = crate::model::traffic::Profile::new(1.0, knots);
    let lowest = knots
        .iter()
        .map(|k| k.at.secs())
        .filter(|t| *t > from && *t < horizon)
        .chain([from, horizon])
        .map(|t| profile.rate_at(t))
        .fold(f64::INFINITY, f64::min);
    (lowest > 0.0).then(|| above_capacity / lowest)
}

/// Why the load `path` (one [`is_load_path`] accepts) brings no work in
/// traffic of `mode`, if it does not: the number of clients of open
/// traffic (its rate is the load), or the rate of a closed loop or a burst
/// (their clients are).
pub fn load_mode_mismatch(path: &str, mode: Mode) -> Option<&'static str> {
    let clients = path.trim().ends_with("clients");
    match (mode, clients) {
        (Mode::Open | Mode::Pool, true) => Some(
            "in open mode the clients share the rate and add no load: search traffic.rate \
             (or a traffic.profile knot's scale)",
        ),
        (Mode::Closed | Mode::Burst, false) => Some(
            "in a closed loop or a burst the clients are the load (the scenario has no rate): \
             search traffic.clients",
        ),
        _ => None,
    }
}

/// A scenario `assess` cannot search (`assess`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AssessError {
    /// The load path names no number in the scenario.
    #[error("--load {path}: the scenario has no number there ({found}); name a numeric field such as traffic.rate or traffic.clients")]
    NotANumber {
        /// The path.
        path: String,
        /// What is there.
        found: String,
    },
    /// The load is zero or negative.
    #[error("--load {path}: the scenario's value {value} must be above 0 to search around it")]
    NotPositive {
        /// The path.
        path: String,
        /// Its value.
        value: String,
    },
    /// No incident to recover from.
    #[error("the scenario has no fault to recover from (a fault covering the whole run is a background condition); assess needs a trigger")]
    NoTrigger,
}

#[cfg(test)]
mod tests {
    use super::{is_load_path, load_mode_mismatch, Mode};

    #[test]
    fn only_what_brings_work_is_a_load() {
        for ok in [
            "traffic.rate",
            "traffic.clients",
            "traffic.profile.1.scale",
            "traffic.profile[0].scale",
        ] {
            assert!(is_load_path(ok), "{ok}");
        }
        for not in [
            "seed",
            "backend.workers",
            "traffic.think_time",
            "traffic.profile.x.scale",
            "traffic",
            "traffic.rate.x",
            "traffic..rate",
        ] {
            assert!(!is_load_path(not), "{not}");
        }
        assert!(load_mode_mismatch("traffic.rate", Mode::Open).is_none());
        assert!(load_mode_mismatch("traffic.profile.0.scale", Mode::Open).is_none());
        assert!(load_mode_mismatch("traffic.clients", Mode::Closed).is_none());
        assert!(load_mode_mismatch("traffic.clients", Mode::Burst).is_none());
        assert!(load_mode_mismatch("traffic.clients", Mode::Open).is_some());
        assert!(load_mode_mismatch("traffic.rate", Mode::Closed).is_some());
    }
}
