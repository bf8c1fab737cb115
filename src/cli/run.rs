//! `retrysim run`: simulate every policy of a scenario and write the report.

use crate::report::{self, Perf, ReportOptions};
use crate::runner;
use crate::scenario::{self, Scenario};
use clap::Args;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Examples shown after `--help`.
pub const EXAMPLES: &str = "Examples:
  retrysim run                                   # the built-in 90-second-outage story
  retrysim run scenarios/hotos21-toy.json -o out
  retrysim run scenarios/spanner-90s.json --replications 10 --policy platform
  retrysim run scenarios/spanner-90s.json --set backend.workers=120 --set traffic.rate=6000";

/// The scenario `retrysim run` uses when given no file.
pub const BUILTIN: &str = include_str!("../../scenarios/spanner-90s.json");

/// Flags of `retrysim run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Scenario files (.json or .toml); none = the built-in flagship scenario.
    pub scenarios: Vec<PathBuf>,
    /// Output directory; each scenario writes into DIR/<scenario name>/.
    #[arg(short, long, default_value = "output")]
    pub output: PathBuf,
    /// Overrides the scenario's seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Independent runs per policy (different random streams).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub replications: u32,
    /// Simulate only the named policies (repeatable).
    #[arg(long = "policy")]
    pub policies: Vec<String>,
    /// Overrides one scenario value, e.g. `backend.workers=120` (repeatable).
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub sets: Vec<String>,
    /// Skip the PNG plots (load.png and recovery.png left in the output
    /// directory by an earlier run are deleted).
    #[arg(long)]
    pub no_plots: bool,
    /// Size of the plots in pixels, WIDTHxHEIGHT (default 1400x820; at
    /// least 600x400).
    #[arg(long, value_name = "WxH", value_parser = plot_size_arg)]
    pub plot_size: Option<(u32, u32)>,
    /// Print nothing but errors.
    #[arg(short, long)]
    pub quiet: bool,
}

/// Parses `--plot-size`: `1200x700`.
fn plot_size_arg(text: &str) -> Result<(u32, u32), String> {
    let bad = || format!("plot size {text:?}: write WIDTHxHEIGHT, e.g. 1200x700, at least 600x400");
    let (w, h) = text.split_once(['x', 'X']).ok_or_else(bad)?;
    let (w, h): (u32, u32) = (
        w.trim().parse().map_err(|_| bad())?,
        h.trim().parse().map_err(|_| bad())?,
    );
    if w < 600 || h < 400 || w > 10_000 || h > 10_000 {
        return Err(bad());
    }
    Ok((w, h))
}

/// Runs the command.
pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let mut scenarios = Vec::new();
    if args.scenarios.is_empty() {
        scenarios.push(scenario::load_str(
            BUILTIN,
            "built-in spanner-90s.json",
            &args.sets,
        )?);
    }
    for path in &args.scenarios {
        scenarios.push(scenario::load(path, &args.sets)?);
    }
    for mut s in scenarios {
        if !args.quiet {
            let mut err = std::io::stderr().lock();
            for w in s.warnings() {
                writeln!(err, "{}: warning: {w}", s.spec().name)?;
            }
        }
        if let Some(seed) = args.seed {
            s.set_seed(seed);
        }
        select_policies(&mut s, &args.policies)?;
        run_one(&s, &args)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn select_policies(s: &mut Scenario, names: &[String]) -> anyhow::Result<()> {
    s.select_policies(names).map_err(|n| {
        let known: Vec<_> = s.policies().iter().map(|p| p.name.as_str()).collect();
        crate::error::invalid(format!(
            "--policy {n:?}: scenario {:?} has no such policy (it has: {})",
            s.spec().name,
            known.join(", ")
        ))
    })
}

fn run_one(s: &Scenario, args: &RunArgs) -> anyhow::Result<()> {
    let dir = args.output.join(&s.spec().name);
    std::fs::create_dir_all(&dir)
        .map_err(|e| anyhow::anyhow!("cannot create output directory {}: {e}", dir.display()))?;
    let started = Instant::now();
    let runs = (s.policies().len() as u64) * args.replications as u64;
    let bar = progress_bar(runs, args.quiet, &s.spec().name);
    let results = runner::run_all(s, args.replications, &|| bar.inc(1))?;
    bar.finish_and_clear();
    let wall_s = started.elapsed().as_secs_f64();
    let events: u64 = results.iter().map(|r| r.events).sum();
    let perf = Perf {
        events,
        wall_s,
        events_per_s: if wall_s > 0.0 {
            events as f64 / wall_s
        } else {
            0.0
        },
        threads: rayon::current_num_threads(),
        runs: results.len(),
        requests: results.iter().map(|r| r.summary.requests).sum(),
    };
    let opts = ReportOptions {
        no_plots: args.no_plots,
        plot_size: args.plot_size,
    };
    let written = report::write_all(&dir, s, &results, &perf, &opts)?;
    if !args.quiet {
        let color = std::io::stdout().is_terminal();
        // Written, not printed, so a closed pipe (`| head`) is an error
        // the caller treats as success rather than a panic.
        let mut out = std::io::stdout().lock();
        write!(out, "{}", report::summary_table_colored(s, &results, color))?;
        for p in written {
            writeln!(out, "wrote {}", p.display())?;
        }
    }
    Ok(())
}

/// A progress bar on stderr, shown only on a terminal, only without
/// `--quiet`, and only once the runs have taken more than a second.
fn progress_bar(runs: u64, quiet: bool, name: &str) -> indicatif::ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(runs),
        indicatif::ProgressDrawTarget::hidden(),
    );
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{msg} [{bar:30}] {pos}/{len} runs, {elapsed} (eta {eta})",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    bar.set_message(format!("simulating {name}"));
    // Hidden for the first second, so short runs never show it.
    bar.enable_steady_tick(Duration::from_millis(250));
    let visible = bar.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(1));
        if !visible.is_finished() {
            visible.set_draw_target(indicatif::ProgressDrawTarget::stderr_with_hz(4));
        }
    });
    bar
}
