//! `retrysim run`: simulate every policy of a scenario and write the report.

use super::common::{self, SimArgs, Stdout};
use super::progress;
use crate::error::{Error, InvalidInput, Located};
use crate::report::staging::Staging;
use crate::report::{self, Perf, ReportOptions};
use crate::runner;
use crate::scenario::{self, Scenario};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

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
    /// Scenario files (.json or .toml; `-` reads standard input); none = the built-in flagship scenario.
    pub scenarios: Vec<PathBuf>,
    /// The flags every simulating command shares.
    #[command(flatten)]
    pub sim: SimArgs,
    /// Size of the plots in pixels, WIDTHxHEIGHT (default 1400x820; from
    /// 1000x600 to 10000x10000: below that the legend and the alert band,
    /// whose text does not shrink, leave the chart too little room).
    /// attempts.png takes the width only: its height grows with the number
    /// of policies, one panel each.
    #[arg(long, value_name = "WxH", value_parser = plot_size_arg)]
    pub plot_size: Option<(u32, u32)>,
    /// Also write trace.json (Chrome trace-event format, for
    /// ui.perfetto.dev or Chromium DevTools' Performance panel): the story of N requests per
    /// policy from replication 0 (the slowest, the first given up, the
    /// rest a fixed-seed sample of request ids). N is 1 to 1000.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub trace: Option<u32>,
}

/// Parses `--plot-size`: `1200x700`.
fn plot_size_arg(text: &str) -> Result<(u32, u32), String> {
    let bad = || {
        format!(
            "plot size {text:?}: write WIDTHxHEIGHT, e.g. 1200x700, from 1000x600 to 10000x10000"
        )
    };
    let (w, h) = text.split_once(['x', 'X']).ok_or_else(bad)?;
    let (w, h): (u32, u32) = (
        w.trim().parse().map_err(|_| bad())?,
        h.trim().parse().map_err(|_| bad())?,
    );
    if w < 1000 || h < 600 || w > 10_000 || h > 10_000 {
        return Err(bad());
    }
    Ok((w, h))
}

/// Every scenario named (the built-in one when none is), each read before
/// any runs; every file refused is named, the last error returned.
fn load_all(args: &RunArgs, output: &Path) -> Result<Vec<Scenario>, Error> {
    let sim = &args.sim;
    let mut scenarios = Vec::new();
    if args.scenarios.is_empty() {
        scenarios.push(scenario::load_str(
            BUILTIN,
            "built-in spanner-90s.json",
            &sim.sets,
        )?);
    }
    let mut refused: Vec<Error> = Vec::new();
    let mut files: Vec<usize> = Vec::new();
    for (k, path) in args.scenarios.iter().enumerate() {
        let s = match scenario::load(path, &sim.sets) {
            Ok(s) => s,
            Err(e) => {
                refused.push(e.into());
                continue;
            }
        };
        // Each report is the folder named after its scenario.
        let name = &s.spec().name;
        if let Some(i) = scenarios.iter().position(|o| o.spec().name == *name) {
            let first = &args.scenarios[files[i]];
            let why = if first == path {
                "given twice: each scenario is run once; give it once (or copy it under \
                 another `name` to compare it with itself)"
                    .to_string()
            } else {
                format!(
                    "scenario name {name:?} is also the name of {}: both reports would be \
                     written to {}; give each scenario its own name",
                    scenario::origin(first),
                    output.join(name).display()
                )
            };
            refused.push(InvalidInput::At(Located::whole(scenario::origin(path), why)).into());
            continue;
        }
        files.push(k);
        scenarios.push(s);
    }
    if let Some(last) = refused.pop() {
        for e in &refused {
            super::print_error(e);
        }
        return Err(last);
    }
    Ok(scenarios)
}

/// Runs the command.
pub fn run(args: RunArgs) -> Result<ExitCode, Error> {
    let sim = &args.sim;
    let output = sim.output.as_deref().unwrap_or(Path::new("output"));
    let mut scenarios = load_all(&args, output)?;
    // Every scenario is ready (its --policy found, its cost within the
    // limits) before the first report is written.
    for s in &mut scenarios {
        sim.apply(s)?;
        sim.guard([&*s], true)?;
    }
    let mut out = Stdout::lock();
    let mut written: Vec<String> = Vec::new();
    for s in scenarios {
        if !sim.quiet {
            for w in s.warnings() {
                common::note(format_args!("{}: warning: {w}", s.spec().name));
            }
        }
        let name = s.spec().name.clone();
        if let Err(e) = run_one(&s, &output.join(&name), &args, &mut out) {
            if e.is_interrupted() && !written.is_empty() {
                // The reports finished before the interruption stay.
                common::note(format_args!(
                    "{} written before the interruption: {}",
                    if written.len() == 1 {
                        "report"
                    } else {
                        "reports"
                    },
                    written.join(", ")
                ));
            }
            return Err(e);
        }
        written.push(name);
    }
    Ok(ExitCode::SUCCESS)
}

/// Simulates one scenario, writes its report into `dir` and prints the
/// summary.
fn run_one(s: &Scenario, dir: &Path, args: &RunArgs, out: &mut Stdout) -> Result<(), Error> {
    let sim = &args.sim;
    let stage = Staging::begin(dir, report::REPORT_FILES, sim.force)?;
    let started = Instant::now();
    let runs = (s.policies().len() as u64) * sim.replications as u64;
    let what = format!("simulating {}", s.spec().name);
    let bar = progress::time_bar(runs, s.spec().duration.ns(), sim.quiet, &what);
    let results = runner::run_all(s, sim.replications, &|| bar.run_done());
    bar.finish_and_clear();
    let results = results?;
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
        requests: results.iter().map(|r| r.summary().requests).sum(),
    };
    let opts = ReportOptions {
        no_plots: sim.no_plots,
        plot_size: args.plot_size,
    };
    let run_report = report::RunReport::new(s, &results);
    let mut written = report::write_all(stage.path(), &run_report, &perf, &opts)?;
    if let Some(n) = args.trace {
        // The stories, and the counters from each policy's replication 0.
        let tales = runner::trace::tales(s, n as usize)?;
        let traces: Vec<report::perfetto::PolicyTrace<'_>> = s
            .policies()
            .iter()
            .zip(&tales)
            .enumerate()
            .map(|(p, (policy, tales))| report::perfetto::PolicyTrace {
                name: &policy.name,
                tales,
                bins: results
                    .iter()
                    .find(|r| r.policy_index == p && r.replication == 0)
                    .map_or(&[][..], |r| r.bins()),
            })
            .collect();
        let text = report::perfetto::trace(&traces);
        report::output::save(stage.path(), "trace.json", text.as_bytes(), &mut written)?;
    }
    let written = report::output::final_paths(&stage, &written);
    stage.commit()?;
    if !sim.quiet {
        let color = out.colors();
        out.print(report::summary_table_colored(&run_report, color))?;
        for p in written {
            out.line(format_args!("wrote {}", p.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::plot_size_arg;

    /// Sizes from 1000x600 to 10000x10000 are taken, in either case of x.
    #[test]
    fn plot_sizes_are_bounded() {
        assert_eq!(plot_size_arg("1000x600"), Ok((1000, 600)));
        assert_eq!(plot_size_arg("1200X700"), Ok((1200, 700)));
        for bad in [
            "600x400",
            "999x600",
            "1000x599",
            "10001x700",
            "1200",
            "ax700",
        ] {
            assert!(plot_size_arg(bad).is_err(), "{bad}");
        }
    }
}
