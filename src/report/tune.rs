//! The files of `retrysim tune`: `candidates.csv` (every candidate
//! simulated, with its spread over the replications), `tune.json` (the
//! recommendation and what bounds it) and `dispatcher.json` (the queue's
//! recommended settings, on a Cloud Tasks scenario).

use super::csv_file::{self, int, text, Cell, Column};
use super::format::json_num;
use super::output::{save, save_json};
use crate::report::OutputError;
use crate::tune::{changes, Candidate, Fresh, Limit, Score, Tuned};
use std::path::{Path, PathBuf};

/// Every file `tune` may write (a stale one is removed when not rewritten).
pub const TUNE_FILES: &[&str] = &["tune.json", "candidates.csv", "dispatcher.json"];

/// One row of `candidates.csv`: a candidate of a search.
struct CandidateRow<'a> {
    tuned: &'a Tuned,
    index: usize,
    cand: &'a Candidate,
}

impl CandidateRow<'_> {
    /// The worst value of `figure` over the assumptions the candidate was
    /// checked under (the largest when `larger`, else the smallest).
    fn worst(&self, figure: fn(&Score) -> f64, larger: bool) -> Cell {
        let worst = self
            .cand
            .checks
            .iter()
            .map(|k| figure(&k.score))
            .reduce(|a, b| if larger { a.max(b) } else { a.min(b) });
        Cell::Num(worst)
    }
}

/// A column of `candidates.csv` from a figure of the candidate's score.
macro_rules! score {
    ($name:literal, |$s:ident| $e:expr) => {
        Column {
            name: $name,
            cell: |r: &CandidateRow<'_>| {
                let $s = &r.cand.score;
                Cell::Num(Option::from($e))
            },
        }
    };
}

/// The columns of `candidates.csv`.
fn candidate_columns<'a>() -> Vec<Column<CandidateRow<'a>>> {
    vec![
        Column {
            name: "candidate",
            cell: |r| int(r.index),
        },
        Column {
            name: "changes",
            cell: |r| text(changes(&r.tuned.baseline, r.cand).join(" ")),
        },
        Column {
            name: "feasible",
            // Met the constraints as the scenario says but not worth the
            // other assumptions (it would not have become the best):
            // unchecked.
            cell: |r| {
                text(match (r.cand.robust, &r.cand.failed) {
                    (true, _) => "true",
                    (false, Some(_)) => "false",
                    (false, None) => "unchecked",
                })
            },
        },
        score!("success_rate", |s| s.success_rate),
        score!("amplification", |s| s.amplification),
        score!("drop_rate", |s| s.drop_rate),
        score!("drop_rate_min", |s| s.spread.drop_rate.0),
        score!("drop_rate_max", |s| s.spread.drop_rate.1),
        score!("dead_letter_rate", |s| s.dead_letter_rate),
        score!("dead_letter_rate_min", |s| s.spread.dead_letter_rate.0),
        score!("dead_letter_rate_max", |s| s.spread.dead_letter_rate.1),
        score!("drain_s", |s| s.drain_s),
        score!("drain_s_min", |s| s.spread.drain_s.map(|r| r.0)),
        score!("drain_s_max", |s| s.spread.drain_s.map(|r| r.1)),
        score!("max_task_age_s_min", |s| s.spread.max_task_age_s.0),
        score!("max_task_age_s_max", |s| s.spread.max_task_age_s.1),
        score!("peak_load_1s_min", |s| s.spread.peak_load_ratio.0),
        score!("peak_load_1s_max", |s| s.spread.peak_load_ratio.1),
        score!("peak_load_bin_max", |s| s.peak_load_bin_ratio),
        score!("recovery_after_fault_s", |s| s.recovery_after_fault_s),
        Column {
            name: "metastable",
            cell: |r| text(r.cand.score.metastable.to_string()),
        },
        score!("unfinished_rate", |s| s.unfinished_rate),
        Column {
            name: "assumptions_checked",
            cell: |r| text(format!("{}/{}", r.cand.checks.len(), r.tuned.assumptions)),
        },
        Column {
            name: "judged_success_rate_min",
            cell: |r| r.worst(|s| s.spread.success_rate.0, false),
        },
        Column {
            name: "judged_drop_rate_max",
            cell: |r| r.worst(|s| s.spread.drop_rate.1, true),
        },
        Column {
            name: "judged_dead_letter_rate_max",
            cell: |r| r.worst(|s| s.spread.dead_letter_rate.1, true),
        },
        Column {
            name: "judged_task_age_s_max",
            cell: |r| r.worst(|s| s.max_task_age_s, true),
        },
        Column {
            name: "judged_peak_load_1s_max",
            cell: |r| r.worst(|s| s.peak_load_ratio, true),
        },
        Column {
            name: "failed",
            cell: |r| text(r.cand.failed.as_ref().map_or("", |b| b.text.as_str())),
        },
        Column {
            name: "replications",
            cell: |r| int(r.cand.score.spread.replications),
        },
        score!("stopped_at_s", |s| s.stopped_at_s),
    ]
}

/// `candidates.csv`: one row per candidate simulated, in order, the
/// baseline (candidate 0) first: what it changes from the baseline,
/// whether it met the constraints under every assumption (`true`,
/// `false`, or `unchecked` when it met them under the reference
/// assumption but the others were not simulated: it would not have become
/// the best, or a better one of its step was found robust first), its
/// figures under the reference assumption as mean, smallest and largest
/// over the replications, and what each constraint was judged on: the
/// `judged_*` columns are the worst value over every replication of every
/// assumption checked (`assumptions_checked` of them; the checks stop at
/// the first broken constraint, named in `failed`). The peak load there
/// is the worst 1 s window; the bin average is `peak_load_bin_max`. The
/// last two columns say what the figures cover: `replications` (fewer
/// than asked when the first broke a constraint, so the others were not
/// run) and `stopped_at_s`, when a run stopped at a broken constraint
/// (empty when every run went to the scenario's end). A figure that is
/// not a number is an empty cell.
pub fn candidates_csv(t: &Tuned) -> Result<Vec<u8>, csv::Error> {
    let rows: Vec<CandidateRow<'_>> = t
        .candidates
        .iter()
        .enumerate()
        .map(|(index, cand)| CandidateRow {
            tuned: t,
            index,
            cand,
        })
        .collect();
    csv_file::table(&candidate_columns(), &rows)
}

/// Writes `candidates.csv` into `dir` (a staged directory) and returns its
/// path there.
pub fn save_candidates(dir: &Path, t: &Tuned) -> Result<PathBuf, OutputError> {
    let mut written = Vec::new();
    save(dir, "candidates.csv", &candidates_csv(t)?, &mut written)?;
    Ok(written.remove(0))
}

/// What a search recommends, as `tune.json` records it.
pub struct Recommendation<'a> {
    /// The best candidate.
    pub best: &'a Candidate,
    /// The `gcloud tasks queues update` flags that set it, if any.
    pub gcloud: Option<&'a str>,
    /// Notes on what the flags cannot say.
    pub notes: &'a [String],
    /// The assumptions it meets every constraint under.
    pub assumptions: &'a [&'a str],
    /// Every constraint with its worst value, the binding one first.
    pub limits: &'a [Limit],
    /// Its check on fresh replications.
    pub fresh: Option<&'a Fresh>,
    /// Where it is worse than the starting setting.
    pub trades: &'a [String],
}

/// A figure in `tune.json` under the report's number rule ([`json_num`]),
/// as every other file writes it: six decimals at most, a whole number
/// without a point, `null` for none or a value that is not a number.
fn figure(x: Option<f64>) -> serde_json::Value {
    serde_json::from_str(&json_num(x)).expect("the number rule writes JSON numbers")
}

/// A constraint and the worst value seen, for `tune.json`.
fn limit_json(l: &Limit) -> serde_json::Value {
    serde_json::json!({
        "constraint": l.name,
        "flag": l.flag,
        "limit": figure(Some(l.limit)),
        "worst": figure(Some(l.worst)),
        "assumption": l.assumption,
    })
}

/// The record `tune.json` holds.
pub fn record(r: &Recommendation<'_>) -> serde_json::Value {
    let s = &r.best.score;
    serde_json::json!({
        "policy": r.best.spec,
        "dispatcher": r.best.dispatcher,
        "gcloud": r.gcloud.map(|f| format!("gcloud tasks queues update QUEUE {f}")),
        "notes": r.notes,
        "score": {
            "success_rate": figure(Some(s.success_rate)),
            "drop_rate": figure(Some(s.drop_rate)),
            "dead_letter_rate": figure(Some(s.dead_letter_rate)),
            "drain_s": figure(s.drain_s),
            "max_task_age_s": figure(Some(s.max_task_age_s)),
            "peak_load_1s": figure(Some(s.peak_load_ratio)),
            "peak_load_bin": figure(Some(s.peak_load_bin_ratio)),
            "replications": s.spread.replications,
        },
        "assumptions": r.assumptions,
        "binding": r.limits.first().map(limit_json),
        "constraints": r.limits.iter().map(limit_json).collect::<Vec<_>>(),
        "fresh_seeds": r.fresh.map(|f| serde_json::json!({
            "first_replication": f.first,
            "replications": f.replications,
            "passed": f.passed,
        })),
        "worse_than_start": r.trades,
    })
}

/// Writes `tune.json` and, with a queue, `dispatcher.json` into `dir` (a
/// staged directory) and returns their paths there.
pub fn save_recommendation(
    dir: &Path,
    r: &Recommendation<'_>,
) -> Result<Vec<PathBuf>, OutputError> {
    let mut written = Vec::new();
    save_json(dir, "tune.json", &record(r), &mut written)?;
    if let Some(d) = &r.best.dispatcher {
        save_json(dir, "dispatcher.json", d, &mut written)?;
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `tune.json`'s figures follow the number rule of every other file.
    #[test]
    fn figures_are_written_under_the_number_rule() {
        let text = |x| figure(x).to_string();
        assert_eq!(text(Some(0.16433864020339292)), "0.164339");
        assert_eq!(text(Some(2.8066666666666666)), "2.806667");
        assert_eq!(text(Some(62.0)), "62");
        assert_eq!(text(Some(-0.0)), "0");
        assert_eq!(text(None), "null");
        assert_eq!(text(Some(f64::NAN)), "null");
        assert_eq!(text(Some(f64::INFINITY)), "null");
    }

    /// Every column has a name and a cell in every row, and a figure
    /// that is not a number is an empty cell, as in every other file.
    #[test]
    fn candidate_columns_are_declared_once() {
        let names: Vec<&str> = candidate_columns().iter().map(|c| c.name).collect();
        assert_eq!(names.len(), 31);
        assert_eq!(names[0], "candidate");
        assert_eq!(names[28], "failed");
        assert_eq!(names[30], "stopped_at_s");
        let unique: std::collections::BTreeSet<&str> = names.iter().copied().collect();
        assert_eq!(unique.len(), names.len());
        assert_eq!(Cell::Num(Some(f64::NAN)).csv(), "");
    }
}
