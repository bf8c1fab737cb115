//! Progress bars: on stderr, only on a terminal, never with `--quiet`,
//! and only once the runs have taken more than a second, so short commands
//! and scripts never see them. The commands that simulate many runs
//! (`sweep`, `map`, `assess`) count runs; the bar of `map` and `assess`
//! grows as the command plans more (a map's refinement pass, an
//! assessment's next probes), so it shows no ETA; a sweep first counts the
//! points it checks and sizes before it runs any; `run`, whose few runs
//! may each be long, follows the simulated time they have covered; `tune`,
//! which cannot tell ahead how many runs its search takes, shows a spinner
//! with the simulated time covered.

use crate::engine::watch;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A bar for `runs` runs (more may be added with `inc_length`), labelled
/// `what`; hidden when `quiet` or when stderr is not a terminal.
pub fn bar(runs: u64, quiet: bool, what: &str) -> indicatif::ProgressBar {
    counter(runs, quiet, what, "runs")
}

/// A bar for runs planned as the command goes (a map's refinement pass,
/// an assessment's next probes), labelled `what`: it shows the runs done
/// of those planned so far and the elapsed time, and no ETA, which would
/// cover only the runs planned so far. Hidden as [`bar`] is.
pub fn growing_bar(quiet: bool, what: &str) -> indicatif::ProgressBar {
    let template = "{msg} [{bar:30}] {pos}/{len} runs planned so far, {elapsed}";
    styled(0, shown(quiet), template)
        .inspect(|bar| bar.set_message(what.to_string()))
        .unwrap_or_else(indicatif::ProgressBar::hidden)
}

/// A bar for `len` steps counted in `unit` (e.g. the points a sweep
/// checks before it runs any), labelled `what`; hidden as [`bar`] is.
pub fn counter(len: u64, quiet: bool, what: &str, unit: &str) -> indicatif::ProgressBar {
    let template =
        format!("{{msg}} [{{bar:30}}] {{pos}}/{{len}} {unit}, {{elapsed}} (eta {{eta}})");
    styled(len, shown(quiet), &template)
        .inspect(|bar| bar.set_message(what.to_string()))
        .unwrap_or_else(indicatif::ProgressBar::hidden)
}

/// The bar of `run`: `runs` runs of `duration_ns` simulated each, labelled
/// `what`. It moves with the simulated time the runs report ([`watch`]),
/// so one long run shows how far it has got; [`TimeBar::run_done`] counts
/// the runs that ended.
pub fn time_bar(runs: u64, duration_ns: u64, quiet: bool, what: &str) -> TimeBar {
    time_bar_shown(runs, duration_ns, shown(quiet), what)
}

/// A spinner for a command whose number of runs is not known ahead
/// (`tune`, whose search decides its next candidates from the last ones),
/// labelled `what`: it shows the elapsed time and the simulated time the
/// runs have covered so far ([`watch`]). Hidden as [`bar`] is.
pub fn activity(quiet: bool, what: &str) -> indicatif::ProgressBar {
    let template = "{spinner} {msg}, {elapsed}";
    let Some(bar) = styled(0, shown(quiet), template) else {
        return indicatif::ProgressBar::hidden();
    };
    let what = what.to_string();
    follow_simulated_time(&bar, move |bar, covered| {
        bar.set_message(format!(
            "{what}: {} simulated",
            crate::report::format::human_secs(covered as f64 / 1e9)
        ))
    });
    bar
}

/// Calls `show` with `bar` and the simulated time (ns) the runs have
/// covered since now ([`watch`]), four times a second from a thread of
/// its own, until the bar is finished.
fn follow_simulated_time(
    bar: &indicatif::ProgressBar,
    show: impl Fn(&indicatif::ProgressBar, u64) + Send + 'static,
) {
    let start = watch::simulated_ns();
    let follow = bar.clone();
    std::thread::spawn(move || {
        while !follow.is_finished() {
            show(&follow, watch::simulated_ns().saturating_sub(start));
            std::thread::sleep(Duration::from_millis(250));
        }
    });
}

/// Whether a bar is drawn at all: not with `--quiet`, nor when stderr is
/// not a terminal.
fn shown(quiet: bool) -> bool {
    !quiet && std::io::stderr().is_terminal()
}

/// [`time_bar`], drawn (after its first second) when `shown`.
fn time_bar_shown(runs: u64, duration_ns: u64, shown: bool, what: &str) -> TimeBar {
    let total = runs.saturating_mul(duration_ns).max(1);
    let template = "{msg} [{bar:30}] {percent}% of simulated time, {elapsed} (eta {eta})";
    // The bar draws nothing for its first second (`styled`), so whether
    // it is followed is decided by `styled`'s answer, not by
    // `ProgressBar::is_hidden`, which is true until then.
    let bar = match styled(total, shown, template) {
        Some(bar) => {
            follow_simulated_time(&bar, move |bar, covered| {
                bar.set_position(covered.min(total))
            });
            bar
        }
        None => indicatif::ProgressBar::hidden(),
    };
    let t = TimeBar {
        bar,
        runs,
        done: AtomicU64::new(0),
        what: what.to_string(),
    };
    t.show_runs(0);
    t
}

/// The bar [`time_bar`] makes.
pub struct TimeBar {
    bar: indicatif::ProgressBar,
    runs: u64,
    done: AtomicU64,
    what: String,
}

impl TimeBar {
    /// One more run ended.
    pub fn run_done(&self) {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        self.show_runs(done);
    }

    /// Removes the bar.
    pub fn finish_and_clear(&self) {
        self.bar.finish_and_clear();
    }

    fn show_runs(&self, done: u64) {
        let runs = self.runs;
        self.bar
            .set_message(format!("{} ({done}/{runs} runs)", self.what));
    }
}

/// A bar of `len` steps drawn with `template`, shown after a second; `None`
/// when it is not to be `shown`.
fn styled(len: u64, shown: bool, template: &str) -> Option<indicatif::ProgressBar> {
    if !shown {
        return None;
    }
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(len),
        indicatif::ProgressDrawTarget::hidden(),
    );
    bar.set_style(
        indicatif::ProgressStyle::with_template(template)
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar.enable_steady_tick(Duration::from_millis(250));
    let visible = bar.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(1));
        if !visible.is_finished() {
            visible.set_draw_target(indicatif::ProgressDrawTarget::stderr_with_hz(4));
        }
    });
    Some(bar)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// The bar of `run` follows the simulated time the runs report, from
    /// its first moment (it draws nothing for a second, but must not stay
    /// at 0 % after that).
    #[test]
    fn time_bar_follows_simulated_time() {
        let second = 1_000_000_000;
        let t = time_bar_shown(1, 1000 * second, true, "test");
        assert!(!t.bar.is_finished());
        // Other tests' runs add too: the bar only has to move.
        watch::add(500 * second);
        let waited = Instant::now();
        while t.bar.position() < 500 * second {
            assert!(
                waited.elapsed() < Duration::from_secs(10),
                "the bar stayed at {} ns",
                t.bar.position()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        t.finish_and_clear();
        assert!(t.bar.is_finished());
    }

    #[test]
    fn hidden_bars_stay_hidden() {
        let t = time_bar_shown(1, 1000, false, "test");
        assert!(t.bar.is_hidden());
        assert!(bar(3, true, "quiet").is_hidden());
    }
}
