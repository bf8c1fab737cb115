//! `retrysim tune`: search a policy's parameters (and, on a Cloud Tasks
//! scenario, the queue's rate limits) for the best setting that meets the
//! constraints in every replication; print it as JSON and as one
//! `gcloud tasks queues update` line.

use super::common::{note, SimArgs, Stdout};
use crate::error::{Error, InvalidInput, OutputError};
use crate::report::{self, staging::Staging};
use crate::scenario::Scenario;
use crate::tune::{self, Constraints, Objective};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// Examples shown after `--help`.
pub const EXAMPLES: &str = "Exit status 0 with a recommendation, 1 when no candidate meets the
constraints (the message says what to relax) or a file cannot be written,
2 for invalid input.

Examples:
  retrysim tune scenarios/spanner-90s.json --policy platform
  retrysim tune scenarios/spanner-90s.json --policy jitter-10 --objective success --max-drop-rate 0.12
  retrysim tune scenarios/hotos21-toy.json --policy retry-once-throttled --objective recovery --replications 3
  retrysim tune scenarios/cloud-tasks-outage.json --policy default --objective drain \
      --max-dead-letter-rate 0 --max-peak-load 2 --max-task-age 2h --replications 3";

/// Flags of `retrysim tune`.
#[derive(Debug, Args)]
pub struct TuneArgs {
    /// Scenario file (.json or .toml; `-` reads standard input).
    pub scenario: PathBuf,
    /// The flags every simulating command shares; `--policy` names the
    /// policy to tune.
    #[command(flatten)]
    pub sim: SimArgs,
    /// What to optimise.
    #[arg(long, value_enum, default_value = "recovery")]
    pub objective: Objective,
    /// Largest acceptable share of dropped requests (e.g. 0.01), in every
    /// replication.
    #[arg(long)]
    pub max_drop_rate: Option<f64>,
    /// Smallest acceptable share of requests that succeed, in every
    /// replication (e.g. 0.97).
    #[arg(long)]
    pub min_success_rate: Option<f64>,
    /// Largest acceptable share of requests dead-lettered (given up at
    /// their retry limits), in every replication (e.g. 0).
    #[arg(long)]
    pub max_dead_letter_rate: Option<f64>,
    /// Longest any request may stay unfinished, in every replication
    /// (e.g. 1h: the task-age alert's threshold).
    #[arg(long, value_name = "DURATION", value_parser = duration_arg)]
    pub max_task_age: Option<crate::time::Dur>,
    /// Largest acceptable peak load: attempts reaching the handler (with
    /// a queue, its dispatches) in the worst 1 s window, whatever the
    /// scenario's bin, ÷ the handler's nominal capacity, in every
    /// replication (e.g. 2).
    #[arg(long)]
    pub max_peak_load: Option<f64>,
    /// Accept candidates that stay metastable.
    #[arg(long)]
    pub allow_metastable: bool,
    /// Rounds of coordinate descent at most (1 to 1000).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub rounds: u16,
    /// Replications the recommendation is re-run on after the search,
    /// with seeds the search did not use (0 to 1000; 0 skips the check).
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u32).range(0..=1000))]
    pub fresh_seeds: u32,
}

/// Parses `--max-task-age`: `90m`, `1h`, `3600` (seconds).
fn duration_arg(text: &str) -> Result<crate::time::Dur, String> {
    crate::time::parse_duration(text).map_err(|e| e.to_string())
}

/// Refuses limits no candidate could meet or that are not numbers of the
/// right kind.
fn check_limits(args: &TuneArgs) -> Result<(), Error> {
    for (flag, value) in [
        ("--max-drop-rate", args.max_drop_rate),
        ("--max-dead-letter-rate", args.max_dead_letter_rate),
        ("--min-success-rate", args.min_success_rate),
    ] {
        if let Some(m) = value {
            if !(0.0..=1.0).contains(&m) {
                return Err(InvalidInput::Flag {
                    flag: format!("{flag} {m}"),
                    message: "must be between 0 and 1".into(),
                }
                .into());
            }
        }
    }
    if let Some(age) = args.max_task_age.filter(|a| a.ns() == 0) {
        return Err(InvalidInput::Flag {
            flag: format!("--max-task-age {age}"),
            message: "must be a duration greater than 0 (every task is older than 0 once it \
                      exists, so no candidate could meet it)"
                .into(),
        }
        .into());
    }
    if let Some(m) = args.max_peak_load {
        if !(m.is_finite() && m > 0.0) {
            return Err(InvalidInput::Flag {
                flag: format!("--max-peak-load {m}"),
                message: "must be a ratio greater than 0 (peak load ÷ capacity, e.g. 2)".into(),
            }
            .into());
        }
    }
    if args.sim.policies.len() > 1 {
        return Err(InvalidInput::Flag {
            flag: "--policy".into(),
            message: format!(
                "given {} times; tune searches one policy at a time",
                args.sim.policies.len()
            ),
        }
        .into());
    }
    Ok(())
}

/// The constraints the flags set.
fn constraints(args: &TuneArgs) -> Constraints {
    Constraints {
        max_drop_rate: args.max_drop_rate,
        min_success_rate: args.min_success_rate,
        must_recover: !args.allow_metastable,
        max_dead_letter_rate: args.max_dead_letter_rate,
        max_task_age_s: args.max_task_age.map(|d| d.secs()),
        max_peak_load: args.max_peak_load,
    }
}

/// Standard output unless `--quiet`.
struct Say {
    out: Stdout,
    quiet: bool,
}

impl Say {
    fn line(&mut self, text: std::fmt::Arguments) -> Result<(), Error> {
        if self.quiet {
            Ok(())
        } else {
            Ok(self.out.line(text)?)
        }
    }
}

/// A score in a few lines: the figures, the queue's, the spread.
fn details(s: &tune::Score, queue: bool) -> String {
    let mut lines = vec![tune::describe(s)];
    if queue {
        lines.push(tune::describe_queue(s));
    }
    let spread = tune::describe_spread(s, queue);
    if !spread.is_empty() {
        lines.push(spread);
    }
    lines.join("\n          ")
}

/// Refuses (unless `--force`) a search whose runs are estimated beyond
/// the limits: [`tune::planned_runs`], each costing what a run of
/// the starting policy does.
fn guard_search(sim: &SimArgs, scenario: &Scenario, budget: tune::Budget) -> Result<(), Error> {
    let start = scenario.spec().policies[0].clone();
    // The scenario resolved with it among its policies, so it resolves
    // alone (as the search's own variants do).
    let one = scenario
        .with_only_policy(start)
        .expect("a policy of a loaded scenario resolves");
    let job = crate::runner::Job {
        scenario: &one,
        policy: 0,
        replication: budget.replications.saturating_sub(1),
    };
    let mut e = sim.estimator(false);
    e.add_like(&job, tune::planned_runs(scenario, 0, budget));
    Ok(sim.refuse_too_big(e.finish(), &scenario.spec().name)?)
}

/// Runs the search and prints the result.
pub fn run(args: TuneArgs) -> Result<ExitCode, Error> {
    let sim = &args.sim;
    let mut scenario = crate::scenario::load(&args.scenario, &sim.sets)?;
    check_limits(&args)?;
    // The policy to tune is the first one left.
    sim.apply(&mut scenario)?;
    let first = &scenario.policies()[0];
    if first.hedging.is_some() {
        return Err(InvalidInput::Flag {
            flag: format!("tune (policy {:?})", first.name),
            message: "a hedging policy has no backoff, jitter or retry limits to search; tune \
                      a retry policy (--policy NAME), or compare hedging delays with `retrysim \
                      sweep --set policies.NAME.hedging.delay=...`"
                .into(),
        }
        .into());
    }
    let budget = tune::Budget {
        replications: sim.replications,
        max_rounds: usize::from(args.rounds),
        fresh: args.fresh_seeds,
    };
    guard_search(sim, &scenario, budget)?;
    let stage = sim.stage_if_asked(&scenario, report::tune::TUNE_FILES)?;
    let constraints = constraints(&args);
    let queue = scenario.spec().dispatcher.is_some();
    let spinner = super::progress::activity(
        sim.quiet,
        &format!("tuning policy {:?}", scenario.policies()[0].name),
    );
    let result = tune::tune(&scenario, 0, args.objective, constraints, budget);
    spinner.finish_and_clear();
    let result = result?;
    let mut say = Say {
        out: Stdout::lock(),
        quiet: sim.quiet,
    };
    say_search(&mut say, &scenario, &result, queue)?;
    // What the report directory receives, said once it is in place.
    let mut wrote = Vec::new();
    if let Some(stage) = &stage {
        let path = report::tune::save_candidates(stage.path(), &result)?;
        wrote.push(format!(
            "wrote {} (every candidate, with its spread over the replications)",
            stage.final_path(&path).display()
        ));
    }
    say_failed_fresh(&mut say, &result)?;
    let Some(best) = result.best.clone() else {
        return no_best(&result, stage, &wrote, &mut say);
    };
    say.line(format_args!("best:     {}", details(&best.score, queue)))?;
    let limits = tune::limits(&best, result.fresh.as_ref(), &constraints);
    let assumptions: Vec<&str> = best.checks.iter().map(|c| c.assumption.as_str()).collect();
    let trades = tune::trades(&result.baseline, &best, &constraints);
    say_best(&mut say, &result, &best, &limits, &assumptions, &trades)?;
    let (gcloud, notes) = gcloud_line(&args, &result, &best, queue, &mut say)?;
    if let Some(stage) = stage {
        let recommendation = report::tune::Recommendation {
            best: &best,
            gcloud: gcloud.as_deref(),
            notes: &notes,
            assumptions: &assumptions,
            limits: &limits,
            fresh: result.fresh.as_ref(),
            trades: &trades,
        };
        for path in report::tune::save_recommendation(stage.path(), &recommendation)? {
            wrote.push(format!("wrote {}", stage.final_path(&path).display()));
        }
        stage.commit()?;
        for line in &wrote {
            say.line(format_args!("{line}"))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints what was searched and how the starting setting did.
fn say_search(
    say: &mut Say,
    scenario: &crate::scenario::Scenario,
    result: &tune::Tuned,
    queue: bool,
) -> Result<(), Error> {
    say.line(format_args!(
        "tuning policy {:?} of {} ({} candidates, {} different, {} runs; each feasible one under {})",
        scenario.policies()[0].name,
        scenario.spec().name,
        result.evaluated,
        result.distinct,
        result.runs,
        crate::decimal::count(result.assumptions as f64, "assumption", "assumptions"),
    ))?;
    say.line(format_args!(
        "baseline: {}",
        details(&result.baseline.score, queue)
    ))?;
    Ok(())
}

/// Prints the candidates that met the constraints in the search but not
/// on fresh seeds.
fn say_failed_fresh(say: &mut Say, result: &tune::Tuned) -> Result<(), Error> {
    for (c, f) in &result.failed_fresh {
        say.line(format_args!(
            "not recommended: {} met the constraints in the search but on {} of {} fresh replications only ({})",
            describe_changes(&result.baseline, c),
            f.passed,
            f.replications,
            f.failed.as_deref().unwrap_or("")
        ))?;
    }
    Ok(())
}

/// Says that no candidate qualified (a failure: status 1) and publishes
/// the candidates, removing a `tune.json` of an earlier search that no
/// longer holds.
fn no_best(
    result: &tune::Tuned,
    stage: Option<Staging>,
    wrote: &[String],
    say: &mut Say,
) -> Result<ExitCode, Error> {
    let tally = tune::broken_tally(&result.candidates);
    let broken: Vec<String> = tally
        .iter()
        .map(|(flag, n)| match *flag {
            "--allow-metastable" => format!("{n} did not recover (--allow-metastable)"),
            flag => format!("{n} broke {flag}"),
        })
        .collect();
    let limits = if broken.is_empty() {
        "relax the limits".to_string()
    } else {
        format!(
            "of {} candidates, {}: relax those limits (the `failed` column of candidates.csv, \
             with -o, gives each one's value)",
            result.candidates.len(),
            broken.join(", ")
        )
    };
    let why = if !result.failed_fresh.is_empty() {
        format!("no candidate met the constraints on the fresh replications; {limits}, or add --replications")
    } else {
        format!("no candidate met the constraints in every replication under every assumption; {limits}")
    };
    // Said even with --quiet, on stderr then.
    if say.quiet {
        note(why);
    } else {
        say.line(format_args!("{why}"))?;
    }
    if let Some(stage) = stage {
        stage.commit()?;
        for line in wrote {
            say.line(format_args!("{line}"))?;
        }
    }
    Ok(ExitCode::from(1))
}

/// Prints what bounds the best candidate, how it did on fresh seeds,
/// where it is worse than the start, and its policy and queue settings
/// as JSON to paste.
fn say_best(
    say: &mut Say,
    result: &tune::Tuned,
    best: &tune::Candidate,
    limits: &[tune::Limit],
    assumptions: &[&str],
    trades: &[String],
) -> Result<(), Error> {
    if assumptions.len() > 1 {
        say.line(format_args!(
            "robust:   meets every constraint under each of: {}",
            assumptions.join("; ")
        ))?;
    }
    for (k, l) in limits.iter().enumerate() {
        say.line(format_args!(
            "{} {} {} (limit {}) with {}",
            if k == 0 { "binding: " } else { "         " },
            l.name,
            tune_number(l.worst),
            tune_number(l.limit),
            l.assumption
        ))?;
    }
    if let Some(f) = &result.fresh {
        say.line(format_args!(
            "fresh seeds: {} of {} replications ({}–{}, not used in the search) meet every constraint under every assumption",
            f.passed,
            f.replications,
            f.first,
            f.first + f.replications - 1
        ))?;
    }
    for t in trades {
        say.line(format_args!("worse than the start: {t}"))?;
    }
    let json = crate::json_text::pretty(&best.spec).map_err(OutputError::Json)?;
    say.line(format_args!(
        "\npolicy (paste into the scenario's `policies`):\n{json}"
    ))?;
    if let Some(d) = &best.dispatcher {
        let text = crate::json_text::pretty(d).map_err(OutputError::Json)?;
        say.line(format_args!(
            "\ndispatcher (paste as the scenario's `dispatcher`):\n{text}"
        ))?;
    }
    Ok(())
}

/// Prints the `gcloud` line that sets the best candidate (with a queue,
/// every flag that changes from the queue as it is, rate limits included)
/// and its notes; returns the flags and the notes.
fn gcloud_line(
    args: &TuneArgs,
    result: &tune::Tuned,
    best: &tune::Candidate,
    queue: bool,
    say: &mut Say,
) -> Result<(Option<String>, Vec<String>), Error> {
    let resolve = |spec: &crate::policy::PolicySpec| {
        crate::policy::resolve(spec).map_err(|error| InvalidInput::Resolve {
            origin: args.scenario.display().to_string(),
            error,
        })
    };
    let resolved = resolve(&best.spec)?;
    let mut schedule = true;
    let (gcloud, notes) = if queue {
        let from = resolve(&result.baseline.spec)?;
        match tune::gcloud_update(
            (&from, result.baseline.dispatcher.as_ref()),
            (&resolved, best.dispatcher.as_ref()),
        ) {
            Some((flags, notes)) if flags.is_empty() => {
                say.line(format_args!(
                    "\n(the queue's settings are already the best found: no gcloud flag to change)"
                ))?;
                (None, notes)
            }
            Some((flags, notes)) => (Some(flags), notes),
            None => {
                schedule = false;
                (None, Vec::new())
            }
        }
    } else {
        let flags = tune::gcloud_flags(&resolved);
        schedule = flags.is_some();
        (flags, Vec::new())
    };
    match &gcloud {
        Some(flags) => say.line(format_args!("\ngcloud tasks queues update QUEUE {flags}"))?,
        None if !schedule => say.line(format_args!(
            "\n(not a Cloud Tasks schedule: no gcloud flags)"
        ))?,
        None => {}
    }
    for n in &notes {
        say.line(format_args!("note: {n}"))?;
    }
    Ok((gcloud, notes))
}

/// What `c` changes from `base`, in a few words (`the starting setting`
/// when nothing).
fn describe_changes(base: &tune::Candidate, c: &tune::Candidate) -> String {
    let changes = tune::changes(base, c);
    if changes.is_empty() {
        "the starting setting".into()
    } else {
        changes.join(" ")
    }
}

/// A figure as the terminal shows a limit: up to 3 decimals.
fn tune_number(x: f64) -> String {
    if x.is_infinite() {
        return "∞".into();
    }
    let t = format!("{x:.3}");
    t.trim_end_matches('0').trim_end_matches('.').to_string()
}
