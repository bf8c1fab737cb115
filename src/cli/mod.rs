//! Command-line interface: one subcommand per file, each a thin layer over
//! the library; the flags and the output handle they share are in
//! [`common`].

pub mod assess;
pub mod check;
pub mod common;
pub mod gate;
pub mod import;
pub mod map;
pub mod merge;
pub mod progress;
pub mod run;
pub mod schedule;
pub mod signals;
pub mod sweep;
pub mod tune;

use crate::error::{is_broken_pipe, Error, Report};
use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Simulate retry storms: how much load retries add during an outage,
/// whether the backend recovers, and which policy settings fix it.
#[derive(Debug, Parser)]
#[command(name = "retrysim", version, about, long_about = None)]
pub struct Cli {
    /// The subcommand to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
// Parsed once per process: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Simulate every policy of one or more scenarios and write the report.
    #[command(
        after_help = run::EXAMPLES,
        mut_arg("output", |a| a
            .default_value("output")
            .help("Output directory; each scenario writes into DIR/<scenario name>/")),
        mut_arg("no_plots", |a| a.help(
            "Skip the PNG plots (load.png, recovery.png and attempts.png left in the output directory by an earlier run are deleted)"
        )),
    )]
    Run(run::RunArgs),
    /// Run a scenario at every point of a grid of --set values (sweep.csv).
    #[command(
        after_help = sweep::EXAMPLES,
        mut_arg("output", |a| a.help("Output directory (default output/<scenario name>/sweep)")),
        mut_arg("sets", |a| a
            .required(true)
            .value_name("PATH=V1,V2,...")
            .help("A swept parameter and its values, `PATH=V1,V2,...` or `PATH=A..B:N` (N evenly spaced values from A to B, numbers or durations; repeatable; the grid is the cartesian product). A single value is a fixed override, e.g. `--set seed=3` to change the seed")),
        mut_arg("seed", |a| a.help("Overrides the scenario's seed at every point (after --set)")),
        mut_arg("replications", |a| a.help("Independent runs per (point, policy)")),
        mut_arg("policies", |a| a.help("Simulate only the named policies at every point (repeatable)")),
        mut_arg("no_plots", |a| a.help("Skip the heatmap")),
    )]
    Sweep(sweep::SweepArgs),
    /// Map where each policy recovers over two parameters (map.csv, map.png).
    #[command(
        after_help = map::EXAMPLES,
        mut_arg("output", |a| a.help("Output directory (default output/<scenario name>/map)")),
        mut_arg("sets", |a| a.help("Overrides one scenario value in every cell, e.g. `backend.workers=120` (repeatable)")),
        mut_arg("replications", |a| a.help("Replications of a cell near the 50 % boundary (of every cell with --no-refine)")),
        mut_arg("policies", |a| a.help("Map only the named policies (repeatable)")),
        mut_arg("no_plots", |a| a.help("Skip map.png")),
    )]
    Map(map::MapArgs),
    /// Verdict per policy: trigger threshold, storm load, worst case.
    #[command(
        after_help = assess::EXAMPLES,
        mut_arg("output", |a| a
            .default_value("output")
            .help("Output directory; writes DIR/<scenario name>/assess.json and assess.html")),
        mut_arg("replications", |a| a
            .default_value("3")
            .help("Replications per probe of a search (a probe recovers when at least half of them do)")),
        mut_arg("policies", |a| a.help("Assess only the named policies (repeatable)")),
        mut_arg("no_plots", |a| a.help("Accepted as on run and sweep; assess draws no figures")),
    )]
    Assess(assess::AssessArgs),
    /// Check every policy against conditions for CI (exit status 3 when one fails).
    #[command(
        after_help = gate::EXAMPLES,
        mut_arg("output", |a| a
            .help("Also write DIR/<scenario name>/assess.json and assess.html")),
        mut_arg("replications", |a| a
            .default_value("3")
            .help("Replications per probe of a search (a probe recovers when at least half of them do)")),
        mut_arg("policies", |a| a.help("Check only the named policies (repeatable)")),
        mut_arg("no_plots", |a| a.help("Accepted as on run and sweep; gate draws no figures")),
    )]
    Gate(gate::GateArgs),
    /// Join the shard outputs of `sweep` or `map` into one output.
    #[command(after_help = merge::EXAMPLES)]
    Merge(merge::MergeArgs),
    /// Validate scenario files without simulating.
    #[command(after_help = check::EXAMPLES)]
    Check(check::CheckArgs),
    /// Print the retry schedule of one policy.
    #[command(after_help = schedule::EXAMPLES)]
    Schedule(schedule::ScheduleArgs),
    /// Search a policy's parameters for the best setting that meets constraints.
    #[command(
        after_help = tune::EXAMPLES,
        mut_arg("output", |a| a.help("Also write the result into DIR/<scenario name>/: tune.json, candidates.csv and, for a queue, dispatcher.json")),
        mut_arg("replications", |a| a.help("Replications per candidate")
            .long_help("Replications per candidate. Once a best is found, a candidate whose first replication breaks a constraint for good (a worst second over --max-peak-load, a task older than --max-task-age, a dead letter or drop where the limit is 0) is not run on the others, and its runs stop there: candidates.csv's replications and stopped_at_s say so")),
        mut_arg("policies", |a| a.help("The policy to tune (default: the first); at most once")),
        mut_arg("quiet", |a| a.help("Print nothing but errors (the result included: keep it with -o)")),
        mut_arg("no_plots", |a| a.help("Accepted as on run and sweep; tune draws no figures")),
    )]
    Tune(tune::TuneArgs),
    /// Convert a real configuration into a scenario policy block.
    #[command(subcommand, after_help = import::EXAMPLES)]
    Import(import::ImportCommand),
}

/// Runs the command line and returns the process exit status.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return parse_failure(&e),
    };
    limit_threads();
    // Ctrl-C, SIGTERM and SIGHUP ask every run to stop; the output is
    // abandoned, staging files included, and the exit status says which
    // signal it was (see `signals`).
    signals::install();
    let result = match cli.command {
        Command::Run(a) => run::run(a),
        Command::Sweep(a) => sweep::run(a),
        Command::Map(a) => map::run(a),
        Command::Assess(a) => assess::run(a),
        Command::Gate(a) => gate::run(a),
        Command::Merge(a) => merge::run(a),
        Command::Check(a) => check::run(a),
        Command::Schedule(a) => schedule::run(a),
        Command::Import(a) => import::run(a),
        Command::Tune(a) => tune::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => exit_for(&e),
    }
}

/// The most worker threads a process starts, unless the machine has more
/// cores: every run is CPU-bound, so threads beyond the cores only wait,
/// and thousands of them take longer to start than a small run takes.
pub const MAX_THREADS: usize = 256;

/// Sizes the thread pool: `RAYON_NUM_THREADS` as given (rayon reads it;
/// 0 means one per core), but no more than [`MAX_THREADS`] or the number
/// of cores, whichever is larger; a warning says when a request was cut
/// or could not be read.
fn limit_threads() {
    let Some(given) = std::env::var("RAYON_NUM_THREADS")
        .ok()
        .filter(|v| !v.trim().is_empty())
    else {
        return;
    };
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let Ok(asked) = given.trim().parse::<usize>() else {
        // rayon ignores it too; say so rather than run on a silent default.
        common::note(format_args!(
            "warning: RAYON_NUM_THREADS={given:?} is not a number of threads: using one per \
             core ({cores})"
        ));
        return;
    };
    let most = MAX_THREADS.max(cores);
    if asked > most {
        common::note(format_args!(
            "warning: RAYON_NUM_THREADS={asked}: using {most} threads (this machine has {cores} cores)"
        ));
        // Only fails if the pool already exists, which it cannot yet.
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(most)
            .build_global();
    }
}

/// Prints what clap stopped on (help, version or a usage error) and picks
/// the exit status: clap's own (0 for help and version, 2 for a usage
/// error), 0 for a closed stdout, and 1 when the text could not be
/// written (e.g. `retrysim --help > /dev/full`), which clap's own
/// `exit` would report as success.
fn parse_failure(e: &clap::Error) -> ExitCode {
    use std::io::Write;
    let status = ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
    let written = e.print().and_then(|()| std::io::stdout().flush());
    match written {
        // A usage error goes to stderr: if that fails there is nowhere to
        // say so, and its status already says it failed.
        _ if e.use_stderr() => status,
        Ok(()) => status,
        Err(io) if io.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(io) => {
            common::note(format_args!("error: cannot write to standard output: {io}"));
            ExitCode::from(1)
        }
    }
}

/// Prints an error (with its sources) and picks its exit status: 0 for a
/// closed stdout anywhere in the chain (`retrysim ... | head`: nothing is
/// printed), else [`Error::exit_code`] (2 invalid input, 1 output), or 128 + the
/// signal for an interruption.
pub fn exit_for(e: &Error) -> ExitCode {
    if is_broken_pipe(e) {
        return ExitCode::SUCCESS;
    }
    print_error(e);
    if e.is_interrupted() {
        // 128 + the signal that stopped it (130 for Ctrl-C).
        return ExitCode::from(crate::engine::stop::exit_code());
    }
    ExitCode::from(e.exit_code())
}

/// Prints an error on stderr as every command ends with one: `error: `
/// and the error with its sources, or the interruption.
pub(super) fn print_error(e: &Error) {
    if e.is_interrupted() {
        signals::say_interrupted();
    } else {
        common::note(format_args!("error: {}", Report(e)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn every_command_shows_examples() {
        fn walk(cmd: &clap::Command, path: &str) {
            for sub in cmd.get_subcommands() {
                let name = format!("{path} {}", sub.get_name());
                let help = sub.get_after_help().map(|h| h.to_string());
                let examples = help.as_deref().and_then(|h| h.split_once("Examples:\n"));
                assert!(
                    examples.is_some_and(|(_, list)| list
                        .lines()
                        .any(|l| l.starts_with(&format!("  {name} ")))),
                    "`{name} --help` has no example of itself"
                );
                walk(sub, &name);
            }
        }
        walk(&Cli::command(), "retrysim");
    }

    #[test]
    fn simulating_commands_share_their_flags() {
        let cli = Cli::command();
        let longs = |name: &str| -> Vec<String> {
            let sub = cli.find_subcommand(name).expect(name);
            sub.get_arguments()
                .filter_map(|a| a.get_long().map(str::to_string))
                .collect()
        };
        let shared: Vec<String> =
            <common::SimArgs as clap::Args>::augment_args(clap::Command::new("x"))
                .get_arguments()
                .filter_map(|a| a.get_long().map(str::to_string))
                .collect();
        assert_eq!(shared.len(), 8, "{shared:?}");
        for cmd in ["run", "sweep", "tune", "map", "assess"] {
            let have = longs(cmd);
            for flag in &shared {
                assert!(have.contains(flag), "{cmd} lacks --{flag}");
            }
        }
    }
}
