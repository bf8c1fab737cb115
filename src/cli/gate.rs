//! `retrysim gate`: `assess` with conditions, for CI. Takes the
//! repository's retry configuration (`--config`) into a scenario template,
//! checks each policy against the conditions, writes `--junit` and
//! `--markdown` reports and exits with [`EXIT_FAILED`] when a check fails.

use super::assess::{assess_with_bar, has_trigger, load_fits_mode, AssessArgs};
use super::common::{self, Stdout};
use crate::assess::Assessment;
use crate::error::{Error, InvalidInput};
use crate::gate::{self, Check, Condition, ConfigFormat, EXIT_FAILED};
use crate::report::{self, assess::terminal, output::save_at, staging::Staging};
use crate::scenario::{self, Scenario};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// Examples shown after `--help`.
pub const EXAMPLES: &str = "Assesses every policy as `assess` does, then checks each against the
conditions given (at least one). The policies of --config files replace the
template's (a queue they hold replaces its dispatcher); several files'
policies are joined (two files with a queue are refused). Exit status 0
when every check passes, 3 when one fails, 2 for invalid input, 1 when a
file cannot be written.

Conditions and what they read:
  --fail-on metastable     the trigger threshold: the scenario's own load must recover
  --min-margin X           trigger threshold ÷ the scenario's own load ≥ X
  --max-amplification X    worst-case attempts per request (closed form) ≤ X (X ≥ 1)
  --max-drain DURATION     retry window (nominal delays over the retries allowed) ≤ DURATION
                           (with its unit: 10m, 90s)

Examples:
  retrysim gate scenarios/hotos21-toy.json --set traffic.rate=100 \\
      --config examples/service_config.json --fail-on metastable --min-margin 1.5 \\
      --max-amplification 3 --max-drain 10m --junit gate.xml --markdown gate.md
  retrysim gate scenarios/hotos21-toy.json --config vs.yaml --config-format istio --max-amplification 3";

/// What a `--fail-on` may name.
const FAIL_ON: &[&str] = &["metastable"];

/// Flags of `retrysim gate`.
#[derive(Debug, Args)]
pub struct GateArgs {
    /// The assessment's flags.
    #[command(flatten)]
    pub assess: AssessArgs,
    /// A retry configuration to check (a gRPC service config JSON, a Cloud
    /// Tasks queue YAML, Envoy, Istio, AWS or Linkerd; repeatable): its
    /// policies replace the template's.
    #[arg(long = "config", value_name = "FILE")]
    pub configs: Vec<PathBuf>,
    /// The format of the --config files (gcloud, grpc, envoy, istio, aws,
    /// linkerd); told from each file's content when left out.
    #[arg(long = "config-format", value_name = "FORMAT", value_parser = config_format)]
    pub config_format: Option<ConfigFormat>,
    /// Fail when the scenario's own load does not recover from its
    /// trigger (`metastable`).
    #[arg(long = "fail-on", value_name = "WHAT", value_parser = FAIL_ON.to_vec())]
    pub fail_on: Vec<String>,
    /// Fail when the trigger threshold is below X × the scenario's load.
    #[arg(long, value_name = "X", value_parser = positive)]
    pub min_margin: Option<f64>,
    /// Fail when the worst case allows more than X attempts per request
    /// (1 or more).
    #[arg(long, value_name = "X", value_parser = attempts_per_request)]
    pub max_amplification: Option<f64>,
    /// Fail when the retry window is longer than DURATION (`10m`).
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    pub max_drain: Option<f64>,
    /// Write the checks as JUnit XML to FILE.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Write the checks as a Markdown table to FILE.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
}

/// Parses `--config-format`.
fn config_format(text: &str) -> Result<ConfigFormat, String> {
    ConfigFormat::named(text)
        .ok_or_else(|| format!("{text:?}: one of gcloud, grpc, envoy, istio, aws, linkerd"))
}

/// Parses a positive finite number.
fn positive(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() => Ok(v),
        _ => Err(format!("{text:?}: a number above 0, e.g. 1.5")),
    }
}

/// Parses `--max-amplification`: attempts per request, 1 or more. Every
/// request makes at least its first attempt, so a limit below 1 would
/// fail every policy: it is a mistake in the flag, not a check to run.
fn attempts_per_request(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if (1.0..).contains(&v) && v.is_finite() => Ok(v),
        Ok(v) if v.is_finite() => Err(format!(
            "{text:?}: below 1, and no policy makes fewer than one attempt per request: \
             give 1 or more, e.g. 3"
        )),
        _ => Err(format!(
            "{text:?}: a number of attempts per request, 1 or more, e.g. 3"
        )),
    }
}

/// Parses a duration with its unit (`10m`, `90s`) into seconds. A bare
/// number is refused, as the message for any bad value says: `10` could
/// mean seconds or minutes.
fn duration(text: &str) -> Result<f64, String> {
    let bare = text.trim().parse::<f64>().is_ok();
    if bare {
        return Err(crate::time::DurationError::NotANumber(text.to_string()).to_string());
    }
    crate::time::parse_duration(text)
        .map(|d| d.secs())
        .map_err(|e| e.to_string())
}

impl GateArgs {
    /// The conditions asked for, in a fixed order: metastable, min-margin,
    /// max-amplification, max-drain.
    pub fn conditions(&self) -> Vec<Condition> {
        let mut c = Vec::new();
        if self.fail_on.iter().any(|f| f == "metastable") {
            c.push(Condition::Metastable);
        }
        c.extend(self.min_margin.map(Condition::MinMargin));
        c.extend(self.max_amplification.map(Condition::MaxAmplification));
        c.extend(self.max_drain.map(Condition::MaxDrain));
        c
    }
}

/// The template with `sets` (the configuration's, then the user's, then
/// the assessment's own) applied, and `--seed` and `--policy`.
fn load_with(
    text: &str,
    origin: &str,
    args: &AssessArgs,
    sets: &[String],
) -> Result<Scenario, Error> {
    let mut s = scenario::load_str(text, origin, sets)?;
    args.sim.apply(&mut s)?;
    Ok(s)
}

/// Runs the command.
pub fn run(args: GateArgs) -> Result<ExitCode, Error> {
    let conditions = checked_conditions(&args)?;
    let a = &args.assess;
    let sim = &a.sim;
    let origin = scenario::origin(&a.scenario);
    let text = scenario::read_text(&a.scenario)?;
    let sets = imported_sets(&args, &text, &origin)?;
    let template = Template {
        origin,
        text,
        sets,
        args: a,
        configs: args.configs.len(),
    };
    let load = |extra: &[String]| template.load(extra);
    let base = load(&[])?;
    has_trigger(&template.origin, &base)?;
    load_fits_mode(a, &base)?;
    sim.guard([&base], false)?;
    let stage = sim.stage_if_asked(&base, report::assess::ASSESS_FILES)?;
    let assessed = assess_with_bar(a, &base, &load)?;
    let checks = gate::evaluate(&assessed, &conditions);
    let written = write_reports(&args, stage, &base, &assessed, &checks)?;
    let failed = checks.iter().filter(|c| !c.passed).count();
    if !sim.quiet {
        print_checks(&assessed, &checks, written)?;
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_FAILED)
    })
}

/// The conditions asked for, refusing before anything is read flags that
/// leave nothing to check, a `--load` that is not a load, a
/// `--config-format` without `--config`, standard input or one
/// `--config` file given twice, a report on an input file and two reports
/// on one file.
fn checked_conditions(args: &GateArgs) -> Result<Vec<Condition>, Error> {
    let conditions = args.conditions();
    if conditions.is_empty() {
        return Err(InvalidInput::Flag {
            flag: "gate".into(),
            message: "no condition to check: give at least one of --fail-on metastable, \
                      --min-margin X, --max-amplification X, --max-drain DURATION"
                .into(),
        }
        .into());
    }
    let a = &args.assess;
    if !crate::assess::is_load_path(&a.load) {
        return Err(InvalidInput::Flag {
            flag: format!("--load {}", a.load),
            message: "not a load: traffic.rate, traffic.clients or the scale of a \
                      traffic.profile knot (traffic.profile.0.scale)"
                .into(),
        }
        .into());
    }
    if args.config_format.is_some() && args.configs.is_empty() {
        return Err(InvalidInput::Flag {
            flag: "--config-format".into(),
            message: "names the format of --config files, and none is given".into(),
        }
        .into());
    }
    let stdin = |p: &std::path::Path| p.as_os_str() == scenario::STDIN_PATH;
    if args.configs.iter().filter(|c| stdin(c)).count() + usize::from(stdin(&a.scenario)) > 1 {
        return Err(InvalidInput::Flag {
            flag: "-".into(),
            message: "standard input can be given once: the scenario and a --config, or two \
                      --config files, cannot both be `-`"
                .into(),
        }
        .into());
    }
    for (i, c) in args.configs.iter().enumerate() {
        if c.as_os_str() != scenario::STDIN_PATH
            && args.configs[..i].iter().any(|d| common::same_file(c, d))
        {
            return Err(InvalidInput::Flag {
                flag: format!("--config {}", c.display()),
                message: "given twice: each file's policies would be checked twice".into(),
            }
            .into());
        }
    }
    let mut inputs: Vec<&std::path::Path> = vec![&a.scenario];
    inputs.extend(args.configs.iter().map(|c| c.as_path()));
    for (flag, out) in [("--junit", &args.junit), ("--markdown", &args.markdown)] {
        if let Some(out) = out {
            common::not_an_input(flag, out, &inputs)?;
        }
    }
    if let (Some(j), Some(m)) = (&args.junit, &args.markdown) {
        if common::same_file(j, m) {
            return Err(InvalidInput::Flag {
                flag: format!("--junit {} --markdown {}", j.display(), m.display()),
                message: "the two reports would overwrite each other: give each its own file"
                    .into(),
            }
            .into());
        }
    }
    Ok(conditions)
}

/// The `--set`s the template is loaded with: the `--config` files'
/// policies and queue (their notes printed unless quiet), then the user's.
fn imported_sets(args: &GateArgs, text: &str, origin: &str) -> Result<Vec<String>, Error> {
    let sim = &args.assess.sim;
    let mut imported = Vec::with_capacity(args.configs.len());
    for file in &args.configs {
        let file_text = scenario::read_text(file)?;
        let file_origin = scenario::origin(file);
        let i = gate::import_config(&file_text, &file_origin, args.config_format)?;
        imported.push((file_origin, i));
    }
    let mut sets = if imported.is_empty() {
        Vec::new()
    } else {
        let joined = crate::import::join(imported)?;
        // The template's own queue (with the user's `--set`s), whose
        // per-task deadline and throttling a queue file does not replace.
        // A template that does not load is refused, with its reason, once
        // the sets are in.
        let queue = scenario::load_str(text, origin, &sim.sets)
            .ok()
            .and_then(|s| s.spec().dispatcher.clone());
        let config = gate::config_sets(&joined, queue.as_ref());
        if !sim.quiet {
            for w in &config.notes {
                common::note(w);
            }
        }
        config.sets
    };
    sets.extend(sim.sets.iter().cloned());
    Ok(sets)
}

/// The scenario template and what it is loaded with: each scenario the
/// assessment needs is [`Template::load`]ed from it.
struct Template<'a> {
    text: String,
    origin: String,
    /// The configuration's and the user's `--set`s.
    sets: Vec<String>,
    args: &'a AssessArgs,
    /// How many `--config` files.
    configs: usize,
}

impl Template<'_> {
    /// The template with its sets and the assessment's `extra` ones. A
    /// refusal that the configuration or the assessment may have caused
    /// says so.
    fn load(&self, extra: &[String]) -> Result<Scenario, Error> {
        let mut all = self.sets.clone();
        all.extend(extra.iter().cloned());
        load_with(&self.text, &self.origin, self.args, &all).map_err(|e| match e {
            Error::Invalid(e) if self.configs > 0 || !extra.is_empty() => InvalidInput::Flag {
                flag: "gate".into(),
                message: format!(
                    "the template with the --config policies and the assessment's settings \
                     was refused: {e}"
                ),
            }
            .into(),
            e => e,
        })
    }
}

/// Writes the assessment's report (with `--output`, into `stage`) and the
/// `--junit` and `--markdown` files: the paths written, in that order.
fn write_reports(
    args: &GateArgs,
    stage: Option<Staging>,
    base: &Scenario,
    assessed: &Assessment,
    checks: &[Check],
) -> Result<Vec<PathBuf>, Error> {
    let mut written = Vec::new();
    if let Some(stage) = stage {
        written.extend(report::assess::write(
            stage,
            assessed,
            base.spec().description.as_deref(),
        )?);
    }
    let name = &assessed.scenario;
    if let Some(path) = &args.junit {
        written.push(save_at(
            path,
            report::junit::junit(name, checks).as_bytes(),
        )?);
    }
    if let Some(path) = &args.markdown {
        written.push(save_at(
            path,
            report::markdown::markdown(name, checks).as_bytes(),
        )?);
    }
    Ok(written)
}

/// Prints the assessment, each check, the count failed and the files
/// `written`.
fn print_checks(
    assessed: &Assessment,
    checks: &[Check],
    written: Vec<PathBuf>,
) -> Result<(), Error> {
    let name = &assessed.scenario;
    let failed = checks.iter().filter(|c| !c.passed).count();
    let mut out = Stdout::lock();
    out.print(terminal(assessed))?;
    out.line("")?;
    for c in checks {
        out.line(format_args!(
            "{} {}",
            if c.passed { "pass" } else { "FAIL" },
            c.message()
        ))?;
    }
    out.line(format_args!(
        "gate {name}: {failed} of {} checks failed",
        checks.len()
    ))?;
    for p in written {
        out.line(format_args!("wrote {}", p.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--max-drain` takes a duration with its unit; a bare number is
    /// refused with the message of any other bad value.
    #[test]
    fn a_drain_limit_needs_its_unit() {
        assert_eq!(duration("10m"), Ok(600.0));
        assert_eq!(duration("1.5s"), Ok(1.5));
        let bare = duration("10").unwrap_err();
        let word = duration("soon").unwrap_err();
        assert_eq!(
            bare,
            "invalid duration \"10\": expected a number with a unit such as \"250ms\", \
             \"1.5s\" or \"2m\""
        );
        assert_eq!(
            word.replace("soon", "10"),
            bare,
            "one message for every value without a unit"
        );
        assert!(duration(" 0.5 ").is_err());
    }

    /// `--max-amplification` below 1 is refused: every policy makes at
    /// least one attempt per request, so every check would fail.
    #[test]
    fn an_amplification_limit_below_one_is_refused() {
        assert_eq!(attempts_per_request("3"), Ok(3.0));
        assert_eq!(attempts_per_request("1"), Ok(1.0));
        for bad in ["0.5", "0", "-2"] {
            let e = attempts_per_request(bad).unwrap_err();
            assert!(
                e.contains("no policy makes fewer than one attempt per request"),
                "{bad}: {e}"
            );
        }
        for bad in ["inf", "NaN", "x"] {
            let e = attempts_per_request(bad).unwrap_err();
            assert!(e.contains("1 or more"), "{bad}: {e}");
        }
    }
}
