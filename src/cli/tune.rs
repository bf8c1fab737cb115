//! `retrysim tune`: search a policy's parameters for the best setting that
//! meets the constraints; print it as JSON and as `gcloud` flags.

use crate::error::invalid;
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
    /// The policy to tune (default: the first).
    #[arg(long)]
    pub policy: Option<String>,
    /// What to optimise.
    #[arg(long, value_enum, default_value = "recovery")]
    pub objective: Objective,
    /// Largest acceptable share of dropped requests (e.g. 0.01).
    #[arg(long)]
    pub max_drop_rate: Option<f64>,
    /// Accept candidates that stay metastable.
    #[arg(long)]
    pub allow_metastable: bool,
    /// Replications per candidate.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub replications: u32,
    /// Rounds of coordinate descent at most.
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Overrides one scenario value, e.g. `traffic.rate=5000` (repeatable).
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub sets: Vec<String>,
    /// Also write the result as JSON to DIR/<scenario name>/tune.json.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

/// Runs the search and prints the result.
pub fn run(args: TuneArgs) -> anyhow::Result<ExitCode> {
    let scenario = crate::scenario::load(&args.scenario, &args.sets)?;
    if let Some(m) = args.max_drop_rate {
        if !(0.0..=1.0).contains(&m) {
            return Err(invalid(format!(
                "--max-drop-rate {m}: must be between 0 and 1"
            )));
        }
    }
    let index = match &args.policy {
        None => 0,
        Some(name) => scenario
            .policies()
            .iter()
            .position(|p| &p.name == name)
            .ok_or_else(|| {
                invalid(format!(
                    "--policy {name:?}: no such policy in {} (it has: {})",
                    args.scenario.display(),
                    scenario
                        .policies()
                        .iter()
                        .map(|p| p.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?,
    };
    let constraints = Constraints {
        max_drop_rate: args.max_drop_rate,
        must_recover: !args.allow_metastable,
    };
    let result = tune::tune(
        &scenario,
        index,
        args.objective,
        constraints,
        args.replications,
        args.rounds,
    )?;
    println!(
        "tuning policy {:?} of {} ({} candidates simulated)",
        scenario.policies()[index].name,
        scenario.spec().name,
        result.evaluated
    );
    println!("baseline: {}", tune::describe(&result.baseline.score));
    let Some(best) = result.best else {
        println!(
            "no candidate met the constraints; relax --max-drop-rate or pass --allow-metastable"
        );
        return Ok(ExitCode::from(1));
    };
    println!("best:     {}", tune::describe(&best.score));
    let json = serde_json::to_string_pretty(&best.spec)?;
    println!("\npolicy (paste into the scenario's `policies`):\n{json}");
    let resolved = crate::policy::resolve(&best.spec).map_err(|e| anyhow::anyhow!(e))?;
    match tune::gcloud_flags(&resolved) {
        Some(flags) => println!("\ngcloud tasks queues update QUEUE {flags}"),
        None => println!("\n(not a Cloud Tasks schedule: no gcloud flags)"),
    }
    if let Some(dir) = args.output {
        let dir = dir.join(&scenario.spec().name);
        std::fs::create_dir_all(&dir)?;
        let path = dir.join("tune.json");
        std::fs::write(&path, json + "\n")?;
        println!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}
