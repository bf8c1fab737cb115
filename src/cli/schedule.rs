//! `retrysim schedule`: the retry schedule of one policy, so an SRE can see
//! what a queue or client config does before simulating it: when each retry
//! goes out, how far jitter moves it, and how long the whole retry window
//! lasts.
//!
//! The policy comes from a preset, a file holding one policy object, or
//! backoff flags; flags override what the preset or file says.

use crate::error::invalid;
use crate::policy::schedule::{human, schedule, Schedule};
use crate::policy::{presets, resolve, Jitter, Policy};
use crate::policy::{BackoffSpec, JitterSpec, PolicySpec};
use crate::time::{format_duration, parse_duration, Dur, Nanos, NS_PER_SEC};
use clap::{Args, ValueEnum};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Examples shown after `--help`.
pub const EXAMPLES: &str = "Examples:
  retrysim schedule --preset cloud-tasks-default
  retrysim schedule --preset grpc --max-attempts 5 --csv
  retrysim schedule --backoff cloud_tasks --min-backoff 10s --max-backoff 300s --max-doublings 3
  retrysim schedule --backoff exponential --initial 100ms --multiplier 2 --max 32s --jitter full
  retrysim schedule --policy my-policy.json --attempts 50
  retrysim schedule --preset cloud-tasks-critical --png schedule.png";

/// The backoff kinds, as scenario files name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum BackoffKind {
    Constant,
    Linear,
    Exponential,
    CloudTasks,
    Decorrelated,
}

/// Flags of `retrysim schedule`.
#[derive(Debug, Args)]
pub struct ScheduleArgs {
    /// A named policy preset.
    #[arg(long, conflicts_with = "policy")]
    pub preset: Option<String>,
    /// A JSON or TOML file holding one policy object (as in a scenario's
    /// `policies` list).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Backoff kind (default: the preset's or file's).
    #[arg(long, value_enum)]
    pub backoff: Option<BackoffKind>,
    /// Constant backoff: the delay.
    #[arg(long, value_parser = dur_arg)]
    pub delay: Option<Dur>,
    /// Linear / exponential backoff: the first delay.
    #[arg(long, value_parser = dur_arg)]
    pub initial: Option<Dur>,
    /// Linear backoff: growth per retry.
    #[arg(long, value_parser = dur_arg)]
    pub step: Option<Dur>,
    /// Exponential backoff: growth factor (default 2).
    #[arg(long)]
    pub multiplier: Option<f64>,
    /// Linear / exponential / decorrelated backoff: the cap.
    #[arg(long, value_parser = dur_arg)]
    pub max: Option<Dur>,
    /// Exponential / Cloud Tasks backoff: doublings before growth stops
    /// (Cloud Tasks: turns linear).
    #[arg(long)]
    pub max_doublings: Option<u32>,
    /// Cloud Tasks backoff: the first interval (default 0.1s).
    #[arg(long, value_parser = dur_arg)]
    pub min_backoff: Option<Dur>,
    /// Cloud Tasks backoff: the cap (default 3600s).
    #[arg(long, value_parser = dur_arg)]
    pub max_backoff: Option<Dur>,
    /// Decorrelated backoff: the base delay.
    #[arg(long, value_parser = dur_arg)]
    pub base: Option<Dur>,
    /// Jitter: none, full, equal, next_step, or a proportional factor such as 0.1.
    #[arg(long, value_parser = jitter_arg)]
    pub jitter: Option<JitterSpec>,
    /// Attempts in all, the first included; 0 or -1 = unlimited (default
    /// with backoff flags alone: unlimited).
    #[arg(long, allow_negative_numbers = true)]
    pub max_attempts: Option<i64>,
    /// Retry time limit measured from the first attempt.
    #[arg(long, value_parser = dur_arg)]
    pub max_retry_duration: Option<Dur>,
    /// Rows to show (default 20, never more than the policy allows).
    #[arg(long, value_name = "N")]
    pub attempts: Option<u32>,
    /// Print CSV (one row per retry, seconds) instead of a table.
    #[arg(long)]
    pub csv: bool,
    /// Also draw the schedule as a PNG (delay per retry with its jitter
    /// range, and the time since the first attempt) into FILE.
    #[arg(long, value_name = "FILE")]
    pub png: Option<PathBuf>,
}

fn dur_arg(text: &str) -> Result<Dur, String> {
    parse_duration(text)
}

/// Parses `--jitter`: a mode name or a proportional factor in [0, 1].
pub fn jitter_arg(text: &str) -> Result<JitterSpec, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "none" => Ok(JitterSpec::None),
        "full" => Ok(JitterSpec::Full),
        "equal" => Ok(JitterSpec::Equal),
        "next_step" | "next-step" => Ok(JitterSpec::NextStep),
        other => match other.trim_end_matches('%').parse::<f64>() {
            Ok(f) => {
                let f = if other.ends_with('%') { f / 100.0 } else { f };
                if (0.0..=1.0).contains(&f) {
                    Ok(JitterSpec::Proportional(f))
                } else {
                    Err(format!("proportional jitter {text:?} must be in [0, 1]"))
                }
            }
            Err(_) => Err(format!(
                "unknown jitter {text:?}: use none, full, equal, next_step or a factor such as 0.1"
            )),
        },
    }
}

/// Reads a file holding one policy object, JSON or (by extension) TOML.
/// Errors are `InvalidInput` naming the file and the field path.
pub fn load_policy_file(path: &Path) -> anyhow::Result<PolicySpec> {
    let origin = path.display();
    let text = std::fs::read_to_string(path)
        .map_err(|e| invalid(format!("{origin}: cannot read: {e}")))?;
    let is_toml = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("toml"));
    if is_toml {
        let de = toml::Deserializer::parse(&text).map_err(|e| invalid(format!("{origin}: {e}")))?;
        serde_path_to_error::deserialize(de).map_err(|e| invalid(format!("{origin}: {e}")))
    } else {
        let mut de = serde_json::Deserializer::from_str(&text);
        let spec: PolicySpec = serde_path_to_error::deserialize(&mut de)
            .map_err(|e| invalid(format!("{origin}: {e}")))?;
        de.end().map_err(|e| invalid(format!("{origin}: {e}")))?;
        Ok(spec)
    }
}

fn kind_of(b: &BackoffSpec) -> BackoffKind {
    match b {
        BackoffSpec::Constant { .. } => BackoffKind::Constant,
        BackoffSpec::Linear { .. } => BackoffKind::Linear,
        BackoffSpec::Exponential { .. } => BackoffKind::Exponential,
        BackoffSpec::CloudTasks { .. } => BackoffKind::CloudTasks,
        BackoffSpec::Decorrelated { .. } => BackoffKind::Decorrelated,
    }
}

/// Builds the backoff from the flags over `base` (the preset's or file's).
fn backoff_from_flags(
    args: &ScheduleArgs,
    base: Option<&BackoffSpec>,
) -> anyhow::Result<Option<BackoffSpec>> {
    let Some(kind) = args.backoff.or(base.map(kind_of)) else {
        return Ok(None);
    };
    // The base only supplies values when it is of the same kind.
    let base = base.filter(|b| kind_of(b) == kind);
    let used: [(&str, bool, &[BackoffKind]); 9] = {
        use BackoffKind::*;
        [
            ("--delay", args.delay.is_some(), &[Constant]),
            ("--initial", args.initial.is_some(), &[Linear, Exponential]),
            ("--step", args.step.is_some(), &[Linear]),
            ("--multiplier", args.multiplier.is_some(), &[Exponential]),
            (
                "--max",
                args.max.is_some(),
                &[Linear, Exponential, Decorrelated],
            ),
            (
                "--max-doublings",
                args.max_doublings.is_some(),
                &[Exponential, CloudTasks],
            ),
            ("--min-backoff", args.min_backoff.is_some(), &[CloudTasks]),
            ("--max-backoff", args.max_backoff.is_some(), &[CloudTasks]),
            ("--base", args.base.is_some(), &[Decorrelated]),
        ]
    };
    let name = kind
        .to_possible_value()
        .map_or(String::new(), |v| v.get_name().to_string());
    for (flag, set, kinds) in used {
        if set && !kinds.contains(&kind) {
            return Err(invalid(format!("{flag} does not apply to {name} backoff")));
        }
    }
    let need = |v: Option<Dur>, flag: &str| {
        v.ok_or_else(|| invalid(format!("{name} backoff needs {flag}")))
    };
    let spec = match (kind, base) {
        (BackoffKind::Constant, b) => {
            let old = match b {
                Some(BackoffSpec::Constant { delay }) => Some(*delay),
                _ => None,
            };
            BackoffSpec::Constant {
                delay: need(args.delay.or(old), "--delay")?,
            }
        }
        (BackoffKind::Linear, b) => {
            let (i, s, m) = match b {
                Some(BackoffSpec::Linear { initial, step, max }) => {
                    (Some(*initial), Some(*step), *max)
                }
                _ => (None, None, None),
            };
            BackoffSpec::Linear {
                initial: need(args.initial.or(i), "--initial")?,
                step: need(args.step.or(s), "--step")?,
                max: args.max.or(m),
            }
        }
        (BackoffKind::Exponential, b) => {
            let (i, mu, m, d) = match b {
                Some(BackoffSpec::Exponential {
                    initial,
                    multiplier,
                    max,
                    max_doublings,
                }) => (Some(*initial), Some(*multiplier), *max, *max_doublings),
                _ => (None, None, None, None),
            };
            BackoffSpec::Exponential {
                initial: need(args.initial.or(i), "--initial")?,
                multiplier: args.multiplier.or(mu).unwrap_or(2.0),
                max: args.max.or(m),
                max_doublings: args.max_doublings.or(d),
            }
        }
        (BackoffKind::CloudTasks, b) => {
            let (lo, hi, d) = match b {
                Some(BackoffSpec::CloudTasks {
                    min_backoff,
                    max_backoff,
                    max_doublings,
                }) => (Some(*min_backoff), Some(*max_backoff), Some(*max_doublings)),
                _ => (None, None, None),
            };
            // Absent values take the Cloud Tasks API defaults.
            BackoffSpec::CloudTasks {
                min_backoff: args.min_backoff.or(lo).unwrap_or(Dur::from_millis(100)),
                max_backoff: args.max_backoff.or(hi).unwrap_or(Dur::from_secs(3600)),
                max_doublings: args.max_doublings.or(d).unwrap_or(16),
            }
        }
        (BackoffKind::Decorrelated, b) => {
            let (ba, m) = match b {
                Some(BackoffSpec::Decorrelated { base, max }) => (Some(*base), Some(*max)),
                _ => (None, None),
            };
            BackoffSpec::Decorrelated {
                base: need(args.base.or(ba), "--base")?,
                max: need(args.max.or(m), "--max")?,
            }
        }
    };
    Ok(Some(spec))
}

/// Resolves the policy the flags describe.
pub fn policy_from_args(args: &ScheduleArgs) -> anyhow::Result<Policy> {
    let (mut spec, base) = if let Some(path) = &args.policy {
        let spec = load_policy_file(path)?;
        let base = match &spec.preset {
            Some(p) => presets::preset(p).and_then(|b| b.backoff),
            None => None,
        };
        (spec, base)
    } else if let Some(name) = &args.preset {
        let preset = presets::preset(name).ok_or_else(|| {
            invalid(format!(
                "unknown preset {name:?}; known presets: {}",
                presets::NAMES.join(", ")
            ))
        })?;
        let spec = PolicySpec {
            name: name.clone(),
            preset: Some(name.clone()),
            ..Default::default()
        };
        (spec, preset.backoff)
    } else {
        let spec = PolicySpec {
            name: "flags".into(),
            max_attempts: Some(0),
            ..Default::default()
        };
        (spec, None)
    };
    let file_backoff = spec.backoff.clone().or(base);
    if let Some(b) = backoff_from_flags(args, file_backoff.as_ref())? {
        spec.backoff = Some(b);
    } else if args.policy.is_none() && args.preset.is_none() {
        return Err(invalid(
            "say which policy: --preset NAME, --policy FILE or --backoff KIND with its flags",
        ));
    }
    if let Some(j) = args.jitter {
        spec.jitter = Some(j);
    }
    if let Some(m) = args.max_attempts {
        spec.max_attempts = Some(m);
    }
    if let Some(d) = args.max_retry_duration {
        spec.max_retry_duration = Some(d);
    }
    let origin = args
        .policy
        .as_ref()
        .map_or(String::new(), |p| format!("{}: ", p.display()));
    resolve(&spec).map_err(|e| invalid(format!("{origin}policy {:?}: {e}", spec.name)))
}

/// One line describing the policy's backoff, jitter and limits (the
/// backoff in the same words as the HTML report).
pub fn describe(p: &Policy) -> String {
    let jitter = match p.jitter {
        Jitter::None => "none".to_string(),
        Jitter::Full => "full U(0, d)".to_string(),
        Jitter::Equal => "equal d/2 + U(0, d/2)".to_string(),
        Jitter::Proportional(f) => format!("proportional d·U({}, {})", 1.0 - f, 1.0 + f),
        Jitter::NextStep => "next step U(d(n), d(n+1)), none at the cap".to_string(),
    };
    let attempts = p
        .max_attempts
        .map_or("unlimited".to_string(), |m| m.to_string());
    let mut line = format!(
        "backoff: {}; jitter: {jitter}; max_attempts: {attempts}",
        p.backoff.describe()
    );
    if let Some(mrd) = p.max_retry_duration {
        line += &format!("; max_retry_duration: {}", format_duration(mrd));
    }
    line
}

/// Seconds with up to nine decimals, trailing zeros trimmed, exact.
fn secs_text(ns: Nanos) -> String {
    let whole = ns / NS_PER_SEC;
    let frac = ns % NS_PER_SEC;
    if frac == 0 {
        return whole.to_string();
    }
    let f = format!("{frac:09}");
    format!("{whole}.{}", f.trim_end_matches('0'))
}

fn write_csv(out: &mut dyn Write, s: &Schedule) -> anyhow::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record([
        "attempt",
        "retry",
        "delay_s",
        "min_s",
        "max_s",
        "cumulative_s",
        "cumulative_min_s",
        "cumulative_max_s",
    ])?;
    for r in &s.rows {
        w.write_record([
            r.attempt.to_string(),
            r.retry.to_string(),
            secs_text(r.delay),
            secs_text(r.min),
            secs_text(r.max),
            secs_text(r.cumulative),
            secs_text(r.cumulative_min),
            secs_text(r.cumulative_max),
        ])?;
    }
    w.flush()?;
    Ok(())
}

fn write_table(out: &mut dyn Write, p: &Policy, s: &Schedule) -> anyhow::Result<()> {
    writeln!(out, "policy: {}", p.name)?;
    writeln!(out, "{}", describe(p))?;
    if s.rows.is_empty() {
        writeln!(out, "no retries: this policy makes one attempt only")?;
        return Ok(());
    }
    let random = p.delay_is_random();
    let mut table: Vec<Vec<String>> = vec![];
    let mut head = vec!["attempt", "retry", "delay"];
    if random {
        head.push("with jitter");
    }
    head.push("cumulative");
    if random {
        head.push("cumulative with jitter");
    }
    table.push(head.iter().map(|h| h.to_string()).collect());
    for r in &s.rows {
        let mut row = vec![r.attempt.to_string(), r.retry.to_string(), human(r.delay)];
        if random {
            row.push(format!("{} .. {}", human(r.min), human(r.max)));
        }
        row.push(human(r.cumulative));
        if random {
            row.push(format!(
                "{} .. {}",
                human(r.cumulative_min),
                human(r.cumulative_max)
            ));
        }
        table.push(row);
    }
    let widths: Vec<usize> = (0..table[0].len())
        .map(|c| {
            table
                .iter()
                .map(|r| r[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    // Single values right-aligned, ranges left-aligned.
    let is_range: Vec<bool> = table[0].iter().map(|h| h.contains("jitter")).collect();
    for row in &table {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (cell, w))| {
                let pad = w - cell.chars().count();
                if !is_range[i] {
                    format!("{}{cell}", " ".repeat(pad))
                } else {
                    format!("{cell}{}", " ".repeat(pad))
                }
            })
            .collect();
        writeln!(out, "{}", cells.join("  ").trim_end())?;
    }
    match (s.retries, s.window) {
        (Some(n), Some(w)) => {
            if (s.rows.len() as u64) < n {
                writeln!(
                    out,
                    "... {} more retries (--attempts N shows more)",
                    n - s.rows.len() as u64
                )?;
            }
            let h = human(w);
            let mut line = if h.ends_with(" s") {
                format!("total retry window: {h} over {n} retries")
            } else {
                format!(
                    "total retry window: {h} ({} s) over {n} retries",
                    secs_text(w)
                )
            };
            if random {
                if let (Some(lo), Some(hi)) = (s.window_min, s.window_max) {
                    line += &format!("; with jitter {} .. {}", human(lo), human(hi));
                }
            }
            writeln!(out, "{line}")?;
        }
        _ => writeln!(
            out,
            "total retry window: unlimited (attempts are unlimited; first {} retries shown)",
            s.rows.len()
        )?,
    }
    Ok(())
}

/// Prints the schedule.
pub fn run(args: ScheduleArgs) -> anyhow::Result<ExitCode> {
    let policy = policy_from_args(&args)?;
    let s = schedule(&policy, args.attempts);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.csv {
        write_csv(&mut out, &s)?;
    } else {
        write_table(&mut out, &policy, &s)?;
    }
    out.flush()?;
    if let Some(path) = &args.png {
        write_png(path, &policy, &s)?;
        eprintln!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// The one-line total retry window under the figure.
fn window_note(s: &Schedule) -> String {
    match (s.retries, s.window) {
        (Some(n), Some(w)) => {
            let shown = if (s.rows.len() as u64) < n {
                format!("; the first {} retries are drawn", s.rows.len())
            } else {
                String::new()
            };
            let mut line = format!("total retry window: {} over {n} retries", human(w));
            if let (Some(lo), Some(hi)) = (s.window_min, s.window_max) {
                if lo != hi {
                    line += &format!(" ({} .. {} with jitter)", human(lo), human(hi));
                }
            }
            line + &shown
        }
        _ => format!(
            "retries are unlimited; the first {} are drawn",
            s.rows.len()
        ),
    }
}

/// Draws `schedule.png` for `policy`.
pub fn write_png(path: &Path, policy: &Policy, s: &Schedule) -> anyhow::Result<()> {
    crate::report::plot::schedule_png(
        path,
        &format!("Retry schedule of {}", policy.name),
        &describe(policy),
        &window_note(s),
        &s.rows,
        policy.delay_is_random(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Backoff;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        a: ScheduleArgs,
    }

    fn args(list: &[&str]) -> ScheduleArgs {
        let mut v = vec!["t"];
        v.extend_from_slice(list);
        T::try_parse_from(v).unwrap().a
    }

    fn text(list: &[&str]) -> String {
        let a = args(list);
        let p = policy_from_args(&a).unwrap();
        let s = schedule(&p, a.attempts);
        let mut buf = vec![];
        if a.csv {
            write_csv(&mut buf, &s).unwrap();
        } else {
            write_table(&mut buf, &p, &s).unwrap();
        }
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn preset_table_shows_the_window() {
        let t = text(&["--preset", "cloud-tasks-default"]);
        assert!(
            t.contains("total retry window: 84.8 h (305353.5 s) over 99 retries"),
            "{t}"
        );
        assert!(t.contains("79 more retries"), "{t}");
    }

    #[test]
    fn backoff_flags_build_a_policy() {
        let t = text(&[
            "--backoff",
            "cloud_tasks",
            "--min-backoff",
            "10s",
            "--max-backoff",
            "300s",
            "--max-doublings",
            "3",
            "--max-attempts",
            "9",
            "--csv",
        ]);
        let delays: Vec<&str> = t
            .lines()
            .skip(1)
            .map(|l| l.split(',').nth(2).unwrap())
            .collect();
        assert_eq!(delays, ["10", "20", "40", "80", "160", "240", "300", "300"]);
        assert!(t.starts_with("attempt,retry,delay_s,"));
    }

    #[test]
    fn flags_override_a_preset() {
        let a = args(&[
            "--preset",
            "cloud-tasks-default",
            "--max-doublings",
            "3",
            "--jitter",
            "0.1",
        ]);
        let p = policy_from_args(&a).unwrap();
        assert_eq!(
            p.backoff,
            Backoff::CloudTasks {
                min_backoff: 100_000_000,
                max_backoff: 3600 * NS_PER_SEC,
                max_doublings: 3
            }
        );
        assert_eq!(p.jitter, Jitter::Proportional(0.1));
        assert_eq!(p.max_attempts, Some(100));
    }

    #[test]
    fn jitter_table_shows_ranges() {
        let t = text(&[
            "--backoff",
            "exponential",
            "--initial",
            "100ms",
            "--max",
            "32s",
            "--jitter",
            "full",
            "--attempts",
            "3",
        ]);
        assert!(t.contains("0 s .. 100 ms"), "{t}");
        assert!(t.contains("unlimited"), "{t}");
    }

    #[test]
    fn bad_flag_combinations_are_invalid_input() {
        for bad in [
            &["--backoff", "constant"][..],
            &["--backoff", "linear", "--initial", "1s", "--delay", "1s"],
            &["--preset", "nope"],
            &[],
        ] {
            let e = policy_from_args(&args(bad)).unwrap_err();
            assert!(
                e.downcast_ref::<crate::error::InvalidInput>().is_some(),
                "{bad:?}: {e}"
            );
        }
        assert!(jitter_arg("2").is_err());
        assert_eq!(jitter_arg("10%"), Ok(JitterSpec::Proportional(0.1)));
    }

    #[test]
    fn policy_files_json_and_toml() {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("p.json");
        std::fs::write(
            &json,
            r#"{"name": "q", "max_attempts": 3, "backoff": {"constant": {"delay": "2s"}}}"#,
        )
        .unwrap();
        let p = policy_from_args(&args(&["--policy", json.to_str().unwrap()])).unwrap();
        assert_eq!(schedule(&p, None).window, Some(4 * NS_PER_SEC));
        let toml_path = dir.path().join("p.toml");
        std::fs::write(
            &toml_path,
            "name = \"t\"\npreset = \"grpc\"\nmax_attempts = 3\n",
        )
        .unwrap();
        let p = policy_from_args(&args(&["--policy", toml_path.to_str().unwrap()])).unwrap();
        assert_eq!(p.max_attempts, Some(3));
        let bad = dir.path().join("bad.json");
        std::fs::write(
            &bad,
            r#"{"name": "q", "backoff": {"constant": {"dealy": "2s"}}}"#,
        )
        .unwrap();
        let e = policy_from_args(&args(&["--policy", bad.to_str().unwrap()])).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("bad.json") && msg.contains("backoff.constant"),
            "{msg}"
        );
    }
}
