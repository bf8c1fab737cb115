//! `retrysim assess`: a one-page verdict per policy on how close the
//! scenario runs to its cliff; prints it and writes `assess.json` and
//! `assess.html` into `DIR/<scenario name>/`.

use super::common::{self, within, SimArgs, Stdout, Within};
use super::progress;
use crate::assess::{assess, Assessment, Options};
use crate::error::{Error, InvalidInput};
use crate::report::{self, assess::terminal, staging::Staging};
use crate::scenario::{self, Scenario};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Examples shown after `--help`.
pub const EXAMPLES: &str = "For each policy: the trigger threshold (the largest load at which the
scenario still recovers from its own fault in at least half of the
replications, by bisection), the load above which a storm the fault started
sustains itself (simulated, and estimated as capacity ÷ attempts per
request), the worst-case attempts per request when everything fails (in
closed form, checked with a whole-run outage) and the retry window.

\"Recovers\" means goodput back above the scenario's recovery_threshold for
its stable_for, starting within --recover-within (default 1m) of the
fault's end; `--recover-within none` accepts a recovery at any time before
the run's end. Each probe's run stops as soon as that is decided.

Examples:
  retrysim assess scenarios/hotos21-toy.json
  retrysim assess scenarios/spanner-90s.json --set 'traffic.profile=[]' --replications 3
  retrysim assess scenarios/hotos21-toy.json --load traffic.rate --replications 5";

/// Flags of `retrysim assess`.
#[derive(Debug, Args)]
pub struct AssessArgs {
    /// Scenario file (.json or .toml; `-` reads standard input).
    pub scenario: PathBuf,
    /// The flags every simulating command shares.
    #[command(flatten)]
    pub sim: SimArgs,
    /// The load to search: traffic.rate, traffic.clients or a
    /// traffic.profile knot's scale (traffic.profile.0.scale).
    #[arg(long = "load", value_name = "PATH", default_value = "traffic.rate", value_parser = trimmed)]
    pub load: String,
    /// Relative width of the threshold interval at which a search stops.
    #[arg(long, default_value_t = 0.02, value_parser = tolerance)]
    pub tolerance: f64,
    /// A probe recovers when its recovery starts within this long after
    /// the fault's end (e.g. 30s, 5m); `none`: at any time before the
    /// run's end.
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = within)]
    pub recover_within: Within,
}

/// Parses `--tolerance`: a share in (0, 1).
fn tolerance(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        _ => Err(format!("{text:?}: a relative width in (0, 1), e.g. 0.02")),
    }
}

/// A path as given, without the spaces around it.
fn trimmed(text: &str) -> Result<String, String> {
    Ok(text.trim().to_string())
}

/// The scenario with the user's overrides and `extra` ones the assessment
/// sets itself (a probe's load, the worst case's outage). A refusal of
/// what the assessment set is not in the user's file or flags: it says so,
/// naming `--load` for a probe of `load_path`.
fn load_with(
    text: &str,
    origin: &str,
    sim: &SimArgs,
    load_path: &str,
    extra: &[String],
) -> Result<Scenario, Error> {
    let mut sets = sim.sets.clone();
    sets.extend(extra.iter().cloned());
    let refused = |e: InvalidInput| -> Error {
        if extra.is_empty() {
            return e.into();
        }
        let probe = extra
            .iter()
            .any(|s| s.starts_with(&format!("{load_path}=")));
        InvalidInput::Flag {
            flag: if probe {
                format!("--load {load_path}")
            } else {
                "assess".to_string()
            },
            message: format!(
                "the assessment set {} and the scenario refused it: {e}",
                extra.join(" ")
            ),
        }
        .into()
    };
    let mut s = scenario::load_str(text, origin, &sets).map_err(refused)?;
    sim.apply(&mut s).map_err(refused)?;
    Ok(s)
}

/// Refuses a scenario with nothing to recover from, naming its file
/// (`origin`) and its `faults`: what `assess` and `gate` check before
/// anything runs.
pub(super) fn has_trigger(origin: &str, base: &Scenario) -> Result<(), Error> {
    let spec = base.spec();
    if spec.incident(spec.duration.ns()).is_some() {
        return Ok(());
    }
    Err(InvalidInput::At(crate::scenario::error::Located::at_path(
        origin,
        "faults",
        crate::assess::AssessError::NoTrigger.to_string(),
    ))
    .into())
}

/// Refuses a `--load` that brings no work in `base`'s traffic mode (what
/// `assess` and `gate` both check before anything runs).
pub(super) fn load_fits_mode(args: &AssessArgs, base: &Scenario) -> Result<(), Error> {
    match crate::assess::load_mode_mismatch(&args.load, base.spec().traffic.mode) {
        Some(why) => Err(InvalidInput::Flag {
            flag: format!("--load {}", args.load),
            message: why.to_string(),
        }
        .into()),
        None => Ok(()),
    }
}

/// Assesses `base` as `args` ask, each probe's scenario built by `load`,
/// with a progress bar over the runs (shared by `assess` and `gate`).
pub(super) fn assess_with_bar(
    args: &AssessArgs,
    base: &Scenario,
    load: &dyn Fn(&[String]) -> Result<Scenario, Error>,
) -> Result<Assessment, Error> {
    let opts = Options {
        load_path: args.load.clone(),
        replications: args.sim.replications,
        tolerance: args.tolerance,
        recover_within: args.recover_within.0,
    };
    let bar = progress::growing_bar(args.sim.quiet, &format!("assessing {}", base.spec().name));
    let assessed = assess(base, &opts, load, &|n| bar.inc_length(n), &|| bar.inc(1));
    bar.finish_and_clear();
    assessed
}

/// Runs the command.
pub fn run(args: AssessArgs) -> Result<ExitCode, Error> {
    let sim = &args.sim;
    let origin = scenario::origin(&args.scenario);
    let text = scenario::read_text(&args.scenario)?;
    if !crate::assess::is_load_path(&args.load) {
        return Err(InvalidInput::Flag {
            flag: format!("--load {}", args.load),
            message: "not a load: the search raises it until the scenario stops recovering, so \
                      it must bring more work as it grows: traffic.rate, traffic.clients or the \
                      scale of a traffic.profile knot (traffic.profile.0.scale)"
                .to_string(),
        }
        .into());
    }
    let load = |extra: &[String]| load_with(&text, &origin, sim, &args.load, extra);
    let base = load(&[])?;
    has_trigger(&origin, &base)?;
    load_fits_mode(&args, &base)?;
    if !sim.quiet {
        for w in base.warnings() {
            common::note(format_args!("{}: warning: {w}", base.spec().name));
        }
    }
    // The scenario as written must be one `run` would accept.
    sim.guard([&base], false)?;
    let dir = sim
        .output
        .as_deref()
        .unwrap_or(Path::new("output"))
        .join(&base.spec().name);
    let stage = Staging::begin(&dir, report::assess::ASSESS_FILES, sim.force)?;
    let a = assess_with_bar(&args, &base, &load)?;
    let written = report::assess::write(stage, &a, base.spec().description.as_deref())?;
    if !sim.quiet {
        let mut out = Stdout::lock();
        out.print(terminal(&a))?;
        for p in written {
            out.line(format_args!("wrote {}", p.display()))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
