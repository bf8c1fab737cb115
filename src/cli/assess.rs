//! `retrysim assess`: a one-page verdict per policy on how close the
//! scenario runs to its cliff; prints it and writes `assess.json` and
//! `assess.html` into `DIR/<scenario name>/`.

use super::progress;
use crate::assess::{assess, Options};
use crate::error::invalid;
use crate::report::assess::{json, page, terminal};
use crate::scenario::{self, Scenario};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Examples shown after `--help`.
pub const EXAMPLES: &str = "For each policy: the trigger threshold (the largest load at which the
scenario still recovers from its own fault in at least half of the
replications, by bisection), the load above which a storm the fault started
sustains itself (simulated, and estimated as capacity ÷ attempts per
request), the worst-case attempts per request when everything fails (in
closed form, checked with a whole-run outage) and the retry window.

Examples:
  retrysim assess scenarios/hotos21-toy.json
  retrysim assess scenarios/spanner-90s.json --set 'traffic.profile=[]' --replications 3
  retrysim assess scenarios/aws-jitter.json --load traffic.clients";

/// Flags of `retrysim assess`.
#[derive(Debug, Args)]
pub struct AssessArgs {
    /// Scenario file (.json or .toml).
    pub scenario: PathBuf,
    /// The load parameter to search (a number in the scenario).
    #[arg(long = "load", value_name = "PATH", default_value = "traffic.rate")]
    pub load: String,
    /// Relative width of the threshold interval at which a search stops.
    #[arg(long, default_value_t = 0.02, value_parser = tolerance)]
    pub tolerance: f64,
    /// Output directory; writes into DIR/<scenario name>/.
    #[arg(short, long, default_value = "output")]
    pub output: PathBuf,
    /// Overrides one scenario value, e.g. `backend.workers=120`
    /// (repeatable).
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub sets: Vec<String>,
    /// Overrides the scenario's seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Replications per probe of a search (a probe recovers when at least
    /// half of them do).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub replications: u32,
    /// Assess only the named policies (repeatable).
    #[arg(long = "policy")]
    pub policies: Vec<String>,
    /// Print nothing but errors.
    #[arg(short, long)]
    pub quiet: bool,
}

/// Parses `--tolerance`: a share in (0, 1).
fn tolerance(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        _ => Err(format!("{text:?}: a relative width in (0, 1), e.g. 0.02")),
    }
}

/// Runs the command.
pub fn run(args: AssessArgs) -> anyhow::Result<ExitCode> {
    let origin = args.scenario.display().to_string();
    let text = std::fs::read_to_string(&args.scenario)
        .map_err(|e| invalid(format!("{origin}: cannot read: {e}")))?;
    let load = |extra: &[String]| -> anyhow::Result<Scenario> {
        let mut sets = args.sets.clone();
        sets.extend(extra.iter().cloned());
        let mut s = scenario::load_str(&text, &origin, &sets)?;
        if let Some(seed) = args.seed {
            s.set_seed(seed);
        }
        s.select_policies(&args.policies).map_err(|n| {
            let known: Vec<_> = s.policies().iter().map(|p| p.name.as_str()).collect();
            invalid(format!(
                "--policy {n:?}: scenario {:?} has no such policy (it has: {})",
                s.spec().name,
                known.join(", ")
            ))
        })?;
        Ok(s)
    };
    let base = load(&[])?;
    if !args.quiet {
        let mut err = std::io::stderr().lock();
        for w in base.warnings() {
            writeln!(err, "{}: warning: {w}", base.spec().name)?;
        }
    }
    let dir = args.output.join(&base.spec().name);
    std::fs::create_dir_all(&dir)
        .map_err(|e| anyhow::anyhow!("cannot create output directory {}: {e}", dir.display()))?;
    let opts = Options {
        load_path: args.load.clone(),
        replications: args.replications,
        tolerance: args.tolerance,
    };
    let bar = progress::bar(0, args.quiet, &format!("assessing {}", base.spec().name));
    let a = assess(
        &base,
        &opts,
        &|extra| load(extra),
        &|n| bar.inc_length(n),
        &|| bar.inc(1),
    );
    bar.finish_and_clear();
    let a = a.map_err(|e| match e.downcast::<crate::assess::AssessError>() {
        Ok(bad) => invalid(bad.to_string()),
        Err(other) => other,
    })?;
    let mut written = Vec::new();
    for (name, body) in [
        ("assess.json", json(&a)),
        ("assess.html", page(&a, base.spec().description.as_deref())),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, body)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
        written.push(path);
    }
    if !args.quiet {
        let mut out = std::io::stdout().lock();
        write!(out, "{}", terminal(&a))?;
        for p in written {
            writeln!(out, "wrote {}", p.display())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
