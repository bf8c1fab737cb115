//! The progress bar of the commands that simulate many runs (`sweep`,
//! `map`, `assess`): on stderr, only on a terminal, never with `--quiet`,
//! and only once the runs have taken more than a second, so short commands
//! and scripts never see it. Its length can grow as a command plans more
//! runs (a map's refinement pass, an assessment's next probes).

use std::io::IsTerminal;
use std::time::Duration;

/// A bar for `runs` runs (more may be added with `inc_length`), labelled
/// `what`; hidden when `quiet` or when stderr is not a terminal.
pub fn bar(runs: u64, quiet: bool, what: &str) -> indicatif::ProgressBar {
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
    bar.set_message(what.to_string());
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
