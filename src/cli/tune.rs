//! `retrysim tune`: search a policy's parameters for the best setting that
//! meets the constraints; print it as JSON and as `gcloud` flags.

use super::common::{create_output_dir, note, SimArgs, Stdout};
use crate::error::{Error, InvalidInput, OutputError};
use crate::tune::{self, Constraints, Objective};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// Examples shown after `--help`.
pub const EXAMPLES: &str = "Examples:
  retrysim tune scenarios/spanner-90s.json --policy platform
  retrysim tune scenarios/spanner-90s.json --policy queue --objective success --max-drop-rate 0.01
  retrysim tune scenarios/hotos21-toy.json --objective recovery --replications 3";

/// Flags of `retrysim tune`.
#[derive(Debug, Args)]
pub struct TuneArgs {
    /// Scenario file (.json or .toml).
    pub scenario: PathBuf,
    /// The flags every simulating command shares; `--policy` names the
    /// policy to tune.
    #[command(flatten)]
    pub sim: SimArgs,
    /// What to optimise.
    #[arg(long, value_enum, default_value = "recovery")]
    pub objective: Objective,
    /// Largest acceptable share of dropped requests (e.g. 0.01).
    #[arg(long)]
    pub max_drop_rate: Option<f64>,
    /// Accept candidates that stay metastable.
    #[arg(long)]
    pub allow_metastable: bool,
    /// Rounds of coordinate descent at most.
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
}

/// Runs the search and prints the result.
pub fn run(args: TuneArgs) -> Result<ExitCode, Error> {
    let sim = &args.sim;
    let mut scenario = crate::scenario::load(&args.scenario, &sim.sets)?;
    if let Some(m) = args.max_drop_rate {
        if !(0.0..=1.0).contains(&m) {
            return Err(InvalidInput::Flag {
                flag: format!("--max-drop-rate {m}"),
                message: "must be between 0 and 1".into(),
            }
            .into());
        }
    }
    if sim.policies.len() > 1 {
        return Err(InvalidInput::Flag {
            flag: "--policy".into(),
            message: format!(
                "given {} times; tune searches one policy at a time",
                sim.policies.len()
            ),
        }
        .into());
    }
    // The policy to tune is the first one left.
    sim.apply(&mut scenario)?;
    let dir = sim.output.as_ref().map(|d| d.join(&scenario.spec().name));
    if let Some(dir) = &dir {
        create_output_dir(dir)?;
    }
    let constraints = Constraints {
        max_drop_rate: args.max_drop_rate,
        must_recover: !args.allow_metastable,
    };
    let result = tune::tune(
        &scenario,
        0,
        args.objective,
        constraints,
        sim.replications,
        args.rounds,
    )?;
    let mut out = Stdout::lock();
    let mut say = |text: std::fmt::Arguments| {
        if sim.quiet {
            Ok(())
        } else {
            out.line(text)
        }
    };
    say(format_args!(
        "tuning policy {:?} of {} ({} candidates simulated)",
        scenario.policies()[0].name,
        scenario.spec().name,
        result.evaluated
    ))?;
    say(format_args!(
        "baseline: {}",
        tune::describe(&result.baseline.score)
    ))?;
    let Some(best) = result.best else {
        let why =
            "no candidate met the constraints; relax --max-drop-rate or pass --allow-metastable";
        // A failure (status 1): said even with --quiet, on stderr then.
        if sim.quiet {
            note(why);
        } else {
            say(format_args!("{why}"))?;
        }
        return Ok(ExitCode::from(1));
    };
    say(format_args!("best:     {}", tune::describe(&best.score)))?;
    let json = serde_json::to_string_pretty(&best.spec).map_err(OutputError::Json)?;
    say(format_args!(
        "\npolicy (paste into the scenario's `policies`):\n{json}"
    ))?;
    let resolved = crate::policy::resolve(&best.spec).map_err(|error| InvalidInput::Resolve {
        origin: args.scenario.display().to_string(),
        error,
    })?;
    match tune::gcloud_flags(&resolved) {
        Some(flags) => say(format_args!("\ngcloud tasks queues update QUEUE {flags}"))?,
        None => say(format_args!(
            "\n(not a Cloud Tasks schedule: no gcloud flags)"
        ))?,
    }
    if let Some(dir) = dir {
        let path = dir.join("tune.json");
        if let Err(source) = std::fs::write(&path, json + "\n") {
            return Err(OutputError::Write { path, source }.into());
        }
        say(format_args!("wrote {}", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}
