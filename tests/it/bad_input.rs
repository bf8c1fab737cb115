//! Bad scenario input ends with exit status 2 and a message naming the
//! file, the field path and (for syntax errors) the line — never a panic.

use proptest::prelude::*;
use std::path::Path;
use std::process::Command;

/// Runs the binary with `args`; returns (exit code, stderr).
fn retrysim(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the binary runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// `retrysim check tests/bad/<file>` must exit 2 with every `want` in
/// stderr (the file name is always expected).
fn check_bad(file: &str, want: &[&str]) {
    let path = format!("tests/bad/{file}");
    assert!(Path::new(env!("CARGO_MANIFEST_DIR")).join(&path).exists());
    let (code, err) = retrysim(&["check", &path]);
    assert!(!err.contains("panicked"), "{file} panicked:\n{err}");
    assert_eq!(code, Some(2), "{file}: exit status; stderr:\n{err}");
    assert!(
        err.contains(&path),
        "{file}: stderr does not name the file:\n{err}"
    );
    for w in want {
        assert!(err.contains(w), "{file}: stderr lacks {w:?}:\n{err}");
    }
}

/// `retrysim run <good file> --set <set>` must exit 2 before simulating.
fn run_bad_set(set: &str, want: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let (code, err) = retrysim(&[
        "run",
        "tests/good/minimal.json",
        "--no-plots",
        "--quiet",
        "-o",
        out,
        "--set",
        set,
    ]);
    assert!(!err.contains("panicked"), "--set {set} panicked:\n{err}");
    assert_eq!(code, Some(2), "--set {set}: exit status; stderr:\n{err}");
    assert!(err.contains("tests/good/minimal.json"), "{err}");
    for w in want {
        assert!(err.contains(w), "--set {set}: stderr lacks {w:?}:\n{err}");
    }
}

#[test]
fn json_syntax_error_names_line_and_column() {
    check_bad("syntax_missing_comma.json", &[":4:3:", "expected `,`"]);
    check_bad("trailing_garbage.json", &[":27:1:", "trailing characters"]);
}

#[test]
fn toml_syntax_error_names_line_and_column() {
    check_bad("syntax_unterminated_string.toml", &[":1:12:", "string"]);
}

#[test]
fn unknown_fields_are_named_with_their_path() {
    check_bad(
        "unknown_field.json",
        &[
            ":14:",
            "backend.wokers",
            "unknown field `wokers`",
            "`workers`",
        ],
    );
    check_bad(
        "unknown_field_in_variant.json",
        &["policies[0].backoff.exponential.maxx", "`max_doublings`"],
    );
}

#[test]
fn wrong_types_are_named_with_their_path() {
    check_bad(
        "wrong_type.json",
        &[":8:", "backend.workers", "invalid type"],
    );
    check_bad("wrong_type.toml", &[":5:", "traffic.rate", "invalid type"]);
}

#[test]
fn bad_durations() {
    check_bad("negative_duration.json", &[":3:", "duration: ", "negative"]);
    check_bad(
        "unknown_unit.toml",
        &[
            ":12:",
            "faults[0].outage.duration",
            "unknown unit \"parsecs\"",
        ],
    );
}

#[test]
fn unknown_status_lists_the_valid_names() {
    check_bad(
        "unknown_status.json",
        &[
            "policies[0].retry_on[1]",
            "unavailabel",
            "resource_exhausted",
            "permission_denied",
        ],
    );
}

#[test]
fn unknown_preset_lists_the_known_ones() {
    check_bad(
        "unknown_preset.json",
        &[
            "policies[0].preset",
            "cloud-tasks-fast",
            "cloud-tasks-default",
        ],
    );
}

#[test]
fn policy_list_problems() {
    check_bad(
        "empty_policies.json",
        &["policies: needs at least one policy"],
    );
    check_bad(
        "duplicate_policy_names.json",
        &["policies[1].name", "unique"],
    );
    check_bad(
        "retries_without_backoff.json",
        &["policies[0]: ", "`backoff` or a `preset`"],
    );
    check_bad(
        "max_attempts_below_minus_one.json",
        &["policies[0].max_attempts"],
    );
}

#[test]
fn measured_distributions_name_the_bad_percentile_or_bucket() {
    check_bad(
        "quantiles_decreasing.json",
        &[
            ":7:",
            "backend.service_time.quantiles.p90",
            "never decrease",
        ],
    );
    check_bad(
        "histogram_not_cumulative.json",
        &[
            "traffic.network_delay.histogram.buckets[1].count",
            "cumulative",
        ],
    );
}

#[test]
fn min_above_max() {
    check_bad(
        "cloud_tasks_min_gt_max.json",
        &[
            ":21:",
            "policies[0].backoff.cloud_tasks.min_backoff",
            "max_backoff",
        ],
    );
    check_bad(
        "uniform_min_gt_max.toml",
        &[
            ":9:",
            "backend.service_time.uniform.min",
            "greater than max",
        ],
    );
}

#[test]
fn missing_required_fields() {
    check_bad("missing_duration.json", &["missing field `duration`"]);
    check_bad("rate_missing_open_mode.json", &["traffic.rate", "burst"]);
}

#[test]
fn out_of_range_values() {
    check_bad(
        "jitter_out_of_range.json",
        &[":25:", "policies[0].jitter.proportional"],
    );
    check_bad(
        "profile_not_increasing.json",
        &[":16:", "traffic.profile[2].at"],
    );
    check_bad("bin_longer_than_duration.json", &["bin: ", "longer than"]);
    check_bad("errors_rate_above_one.json", &["faults[0].errors.rate"]);
    check_bad("outage_status_ok.json", &["faults[0].outage.status"]);
    // A variant needs its settings as an object; the message says so in
    // the file's terms, not in the Rust type's.
    check_bad(
        "backoff_bare_name.json",
        &[
            ":6:",
            "policies[0].backoff.constant",
            "a bare name, expected an object of its settings (`delay`)",
        ],
    );
    check_bad(
        "service_time_bare_duration.json",
        &[
            ":5:",
            "backend.service_time.constant",
            "string \"10ms\", expected an object of its settings (`value`)",
        ],
    );
    check_bad(
        "lognormal_half_pair.json",
        &["backend.service_time.lognormal"],
    );
    check_bad(
        "token_bucket_too_big.json",
        &["policies[0].budget.token_bucket.max_tokens"],
    );
    // Found by the fuzz test (once a panic in the model; now refused).
    check_bad(
        "token_ratio_huge.json",
        &[
            ":9:",
            "budget.token_bucket.token_ratio",
            "out of range (0, 1000]",
        ],
    );
    check_bad(
        "ratio_min_per_second_huge.json",
        &[
            ":10:",
            "budget.ratio.min_per_second",
            "out of range [0, 1e9]",
        ],
    );
    check_bad(
        "contention_with_workers.json",
        &["backend.workers", "contention"],
    );
}

#[test]
fn absurd_sizes_are_refused() {
    check_bad("too_many_bins.json", &["bin: ", "too many"]);
    check_bad("too_many_clients.json", &["traffic.clients", "too many"]);
    // aws-standard's quota is per client: 20 M copies would not fit.
    check_bad(
        "per_client_state_too_many_clients.json",
        &["policies[0]", "scope"],
    );
}

#[test]
fn unreadable_files() {
    check_bad("empty.json", &["empty"]);
    check_bad("not_utf8.json", &[":1:11:", "UTF-8"]);
    let (code, err) = retrysim(&["check", "tests/bad/does-not-exist.json"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("does-not-exist.json") && !err.contains("panicked"));
}

/// A YAML scenario gets a word about formats, not a TOML parser's
/// complaint about its first line; JSON in a `.yaml` file is read.
#[test]
fn yaml_scenarios_are_named_as_such() {
    let t = tempfile::tempdir().unwrap();
    let yaml = t.path().join("s.yaml");
    std::fs::write(&yaml, "name: t\nduration: 10s\n").unwrap();
    let (code, err) = retrysim(&["check", &yaml.display().to_string()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("s.yaml: scenarios are JSON or TOML, not YAML"),
        "{err}"
    );
    let toy = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/hotos21-toy.json"),
    )
    .unwrap();
    let json_in_yaml = t.path().join("toy.yml");
    std::fs::write(&json_in_yaml, toy).unwrap();
    let (code, err) = retrysim(&["check", &json_in_yaml.display().to_string()]);
    assert_eq!(code, Some(0), "{err}");
}

/// `ok` in `retry_on` is refused where it stands.
#[test]
fn retrying_a_success_is_refused() {
    run_bad_set(
        r#"policies.0.retry_on=["unavailable", "ok"]"#,
        &["policies[0].retry_on[1]", "`ok` is a success"],
    );
}

/// Two scenarios of one name would write one report folder: refused
/// before anything runs.
#[test]
fn two_scenarios_of_one_name_are_refused() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("out").display().to_string();
    let toy = "scenarios/hotos21-toy.json";
    let copy = t.path().join("copy.json").display().to_string();
    std::fs::copy(toy, &copy).unwrap();
    let (code, err) = retrysim(&["run", toy, &copy, "-o", &out, "--no-plots", "-q"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("\"hotos21-toy\" is also the name of"), "{err}");
    assert!(!t.path().join("out").exists(), "nothing ran");
    // The same file twice is said to be that.
    let (code, err) = retrysim(&["run", toy, toy, "-o", &out, "--no-plots", "-q"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("hotos21-toy.json: given twice"), "{err}");
    assert!(!t.path().join("out").exists(), "nothing ran");
}

/// A byte-order mark (as Windows editors save) is not an error, in JSON
/// or TOML; errors after it keep their line and column.
#[test]
fn a_byte_order_mark_is_read_past() {
    let t = tempfile::tempdir().unwrap();
    let toy = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/hotos21-toy.json"),
    )
    .unwrap();
    let json = t.path().join("bom.json");
    std::fs::write(&json, format!("\u{feff}{toy}")).unwrap();
    let toml = t.path().join("bom.toml");
    std::fs::write(&toml, "\u{feff}name = \"t\"\nduration = \"10s\"\n[traffic]\nrate = 10\n[backend]\nworkers = 1\nservice_time = { constant = { value = \"1ms\" } }\n[[policies]]\nname = \"p\"\n").unwrap();
    for f in [&json, &toml] {
        let (code, err) = retrysim(&["check", &f.display().to_string()]);
        assert_eq!(code, Some(0), "{}: {err}", f.display());
    }
    let bad = t.path().join("bad.json");
    std::fs::write(&bad, "\u{feff}{\"name\": 5}").unwrap();
    let (code, err) = retrysim(&["check", &bad.display().to_string()]);
    assert_eq!(code, Some(2));
    assert!(err.contains(":1:10:"), "{err}");
}

#[test]
fn bad_set_path() {
    run_bad_set(
        "policies.9.max_attempts=3",
        &[
            "--set policies.9.max_attempts=3",
            "`policies.9`",
            "out of range",
        ],
    );
    run_bad_set("backend.nope.x=1", &["`backend.nope`", "no such field"]);
    run_bad_set("novalue", &["PATH=VALUE"]);
}

#[test]
fn set_value_of_the_wrong_type() {
    run_bad_set(
        "backend.workers=lots",
        &["backend.workers", "invalid type", "--set"],
    );
    run_bad_set(
        "policies.p.backoff.initial=soon",
        &["policies[0].backoff.exponential.initial"],
    );
    run_bad_set("traffic.rate=-3", &["traffic.rate"]);
}

#[test]
fn names_that_would_escape_or_inject_are_refused() {
    check_bad(
        "policy_name_path_separator.json",
        &[":17:", "policies[0].name", "must not contain `/`"],
    );
    check_bad(
        "policy_name_dotdot.toml",
        &[":12:", "policies[0].name", "must not start with `.`"],
    );
    check_bad(
        "policy_name_formula.json",
        &[":17:", "policies[0].name", "formula"],
    );
    check_bad("empty_name.toml", &[":1:", "name: ", "must not be empty"]);
}

#[test]
fn invisible_characters_edge_whitespace_and_device_names_are_refused() {
    check_bad(
        "name_bidi_override.json",
        &[":2:", "name: ", "U+202E", "Unicode format character"],
    );
    check_bad(
        "policy_name_zero_width_only.json",
        &["policies[0].name", "only of invisible characters"],
    );
    check_bad(
        "name_trailing_space.json",
        &[":2:", "name: ", "starts or ends with whitespace"],
    );
    check_bad(
        "name_reserved_device.json",
        &[":2:", "name: ", "device name CON", "Windows reserves"],
    );
    check_bad(
        "policy_name_reserved_with_extension.json",
        &["policies[0].name", "device name NUL"],
    );
    // Through --set, the same rules.
    run_bad_set("name=AUX", &["device name AUX"]);
    run_bad_set("policies.0.name=a\u{200b}b", &["U+200B"]);
}

#[test]
fn a_set_path_of_sixty_thousand_segments_is_refused_at_once() {
    // Under a policy list, where names are looked up by joining segments
    // (a command-line argument holds at most 128 KiB on Linux: one-letter
    // segments).
    let long = format!("policies.{}", vec!["a"; 59_999].join("."));
    let started = std::time::Instant::now();
    run_bad_set(
        &format!("{long}=1"),
        &["has 60000 segments", "no scenario field is deeper than 256"],
    );
    // The same through brackets, and a path just within the limit (only
    // as many segments as a name can hold are joined).
    let bracketed = format!("policies{}=1", "[x]".repeat(40_000));
    run_bad_set(&bracketed, &["segments"]);
    let dotted = format!("policies.{}=1", vec!["a"; 250].join("."));
    run_bad_set(&dotted, &["policies"]);
    assert!(
        started.elapsed().as_secs() < 10,
        "took {:?}",
        started.elapsed()
    );
}

#[test]
fn fields_of_another_traffic_mode_are_refused() {
    check_bad(
        "closed_mode_with_rate.toml",
        &[":7:", "traffic.rate", "no meaning in closed mode"],
    );
    check_bad(
        "burst_mode_with_rate.json",
        &[":5:", "traffic.rate", "no meaning in burst mode"],
    );
    check_bad(
        "think_time_open_mode.json",
        &["traffic.think_time", "outside closed mode"],
    );
    check_bad(
        "profile_closed_mode.toml",
        &[":7:", "traffic.profile", "outside open mode"],
    );
    check_bad(
        "attempt_timeout_with_dispatcher.json",
        &[":6:", "traffic.attempt_timeout", "dispatch_deadline"],
    );
}

#[test]
fn actions_that_cannot_happen_are_refused() {
    check_bad(
        "force_run_without_dispatcher.json",
        &["actions[0].force_run", "needs a `dispatcher`"],
    );
    check_bad(
        "force_run_tasks_and_fraction.json",
        &["actions[0].force_run", "not both"],
    );
    check_bad(
        "shed_fraction_above_one.toml",
        &[":17:", "actions[0].shed_load.fraction", "out of range"],
    );
    check_bad(
        "action_after_end.json",
        &[
            "actions[0].disable_retries.at",
            "after the end of the run (10m)",
        ],
    );
}

#[test]
fn times_outside_the_run_are_refused() {
    check_bad(
        "fault_after_end.json",
        &[
            "faults[0].outage.start",
            "20m is at or after the end of the run (10m)",
        ],
    );
    check_bad(
        "warmup_longer_than_duration.toml",
        &[":3:", "warmup: ", "15m must be shorter"],
    );
    check_bad(
        "burst_at_after_end.toml",
        &["traffic.burst_at", "1h is at or after the end of the run"],
    );
    check_bad("duration_too_long.json", &[":3:", "duration: ", "too long"]);
}

#[test]
fn policy_values_out_of_range() {
    check_bad(
        "ratio_ttl_out_of_range.json",
        &["policies[0].budget.ratio.ttl", "[1s, 60s]"],
    );
    check_bad(
        "backoff_multiplier_below_one.toml",
        &[":17:", "policies[0].backoff.exponential.multiplier", ">= 1"],
    );
    check_bad(
        "decorrelated_base_above_max.json",
        &["policies[0].backoff.decorrelated.base", "greater than max"],
    );
}

#[test]
fn backend_mistakes() {
    check_bad(
        "workers_zero.json",
        &[":8:", "backend.workers", "at least 1"],
    );
    check_bad(
        "queue_without_service_time.toml",
        &["backend.service_time", "missing"],
    );
    check_bad(
        "reject_status_ok.json",
        &["backend.reject_status", "cannot answer `ok`"],
    );
    check_bad(
        "queue_limit_negative.json",
        &[":14:", "backend.queue_limit", "invalid value"],
    );
}

#[test]
fn duplicated_keys_and_sections() {
    check_bad(
        "duplicate_json_key.json",
        &[":4:", "traffic", "duplicate field `rate`"],
    );
    check_bad("table_defined_twice.toml", &[":10:", "duplicate key"]);
    check_bad(
        "unknown_section.toml",
        &[":11:", "unknown field `telemetry`", "`dispatcher`"],
    );
}

#[test]
fn numbers_that_do_not_fit() {
    check_bad(
        "negative_rate.json",
        &[":5:", "traffic.rate", "-5 is not a number"],
    );
    check_bad(
        "rate_overflow.json",
        &[":4:", "traffic.rate", "out of range"],
    );
    check_bad("rate_nan.toml", &[":5:", "traffic.rate", "NaN"]);
    // A huge or tiny value is quoted in scientific notation, not in
    // hundreds of digits.
    check_bad(
        "rate_huge.json",
        &[
            "traffic.rate: 1e300 requests per second is too many",
            "faults[0].errors.rate: -2.5e-200 is out of range",
        ],
    );
    let (_, err) = retrysim(&["check", "tests/bad/rate_huge.json"]);
    assert!(err.lines().all(|l| l.len() < 200), "{err}");
    check_bad(
        "seed_overflow.json",
        &[
            ":3:",
            "seed",
            "expected a whole number up to 18446744073709551615",
        ],
    );
    check_bad(
        "seed_negative.toml",
        &[
            ":3:",
            "seed",
            "`-7`",
            "expected a whole number up to 18446744073709551615",
        ],
    );
}

#[test]
fn set_values_are_checked_like_the_file() {
    run_bad_set(
        "duration=forever",
        &["duration: ", "invalid duration \"forever\"", "--set"],
    );
    run_bad_set(
        "traffic.mode=sideways",
        &["traffic.mode", "unknown variant `sideways`", "`closed`"],
    );
    run_bad_set(
        "policies.0.name=../x",
        &["policies[0].name", "must not contain `/`"],
    );
    run_bad_set(
        "traffic.clients=99999999999",
        &[
            "traffic.clients",
            "expected a whole number up to 4294967295",
        ],
    );
    // A section the file does not have cannot be reached into.
    run_bad_set(
        "faults.0.outage.start=1m",
        &["`faults`", "no such field", "policies"],
    );
}

#[test]
fn every_fixture_is_rejected() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        check_bad(&name, &[]);
        n += 1;
    }
    assert!(n >= 48, "only {n} fixtures");
}

#[test]
fn good_files_pass_check() {
    let (code, err) = retrysim(&[
        "check",
        "scenarios/example.json",
        "scenarios/spanner-90s.json",
        "tests/good/example.toml",
        "tests/good/minimal.json",
    ]);
    assert_eq!(code, Some(0), "{err}");
}

const EXAMPLE: &str = include_str!("../../scenarios/example.json");

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let text = String::from_utf8_lossy(&bytes);
        for origin in ["x.json", "x.toml", "stdin"] {
            let _ = retrysim::scenario::load_str(&text, origin, &[]);
        }
    }

    #[test]
    fn mutated_example_never_panics(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), 0u8..3, any::<char>()), 1..6),
    ) {
        let mut chars: Vec<char> = EXAMPLE.chars().collect();
        for (at, op, c) in edits {
            let i = at.index(chars.len());
            match op {
                0 => { chars.remove(i); }
                1 => chars.insert(i, c),
                _ => chars[i] = c,
            }
        }
        let text: String = chars.into_iter().collect();
        if let Err(e) = retrysim::scenario::load_str(&text, "x.json", &[]) {
            // Every problem is reported against the file, one per line.
            let msg = e.to_string();
            prop_assert!(msg.lines().all(|l| l.starts_with("x.json")), "{}", msg);
        }
    }

    #[test]
    fn mutated_numbers_never_panic(
        which in 0usize..40,
        value in prop_oneof![
            Just("-1".to_string()), Just("0".to_string()), Just("1e308".to_string()),
            Just("-1e308".to_string()), Just("18446744073709551615".to_string()),
            Just("\"0s\"".to_string()), Just("\"1e300s\"".to_string()),
            Just("null".to_string()), Just("[]".to_string()), Just("{}".to_string()),
            any::<f64>().prop_map(|f| f.to_string()),
            any::<i64>().prop_map(|i| i.to_string()),
        ],
    ) {
        // Replace the `which`-th number or string value of the example.
        let mut n = 0;
        let mut out = String::new();
        let mut rest = EXAMPLE;
        while let Some(i) = rest.find(": ") {
            out.push_str(&rest[..i + 2]);
            rest = &rest[i + 2..];
            let end = rest.find([',', '}', '\n']).unwrap_or(rest.len());
            let token = &rest[..end];
            if !token.starts_with(['{', '[']) && n == which {
                out.push_str(&value);
                rest = &rest[end..];
            }
            if !token.starts_with(['{', '[']) {
                n += 1;
            }
        }
        out.push_str(rest);
        if let Err(e) = retrysim::scenario::load_str(&out, "x.json", &[]) {
            // Every problem is reported against the file, one per line.
            let msg = e.to_string();
            prop_assert!(msg.lines().all(|l| l.starts_with("x.json")), "{}", msg);
        }
    }

    #[test]
    fn random_sets_never_panic(
        path in "(policies|backend|traffic|faults|report|name|[0-9]|platform|backoff|initial|workers|rate|outage|duration)(\\.(policies|backend|traffic|faults|report|[0-9]|platform|backoff|initial|workers|rate|outage|duration|exponential)){0,4}",
        value in "(-?[0-9]{1,3}|true|null|\"x\"|[a-z]{1,4}|\\{\\}|\\[\\])",
    ) {
        let set = format!("{path}={value}");
        if let Err(e) = retrysim::scenario::load_str(EXAMPLE, "x.json", &[set]) {
            // Every problem is reported against the file, one per line.
            let msg = e.to_string();
            prop_assert!(msg.lines().all(|l| l.starts_with("x.json")), "{}", msg);
        }
    }
}

#[test]
fn a_directory_or_a_missing_file_is_named_with_the_reason() {
    let (code, err) = retrysim(&["check", "tests/good"]);
    assert_eq!(code, Some(2));
    assert_eq!(
        err,
        "error: tests/good: cannot read: it is a directory; give the files in it, e.g. \
         tests/good/*.json\n"
    );
    let (code, err) = retrysim(&["run", "tests/good/nope.json", "--no-plots"]);
    assert_eq!(code, Some(2));
    assert!(
        err.starts_with("error: tests/good/nope.json: cannot read: No such file"),
        "{err}"
    );
    // schedule's --policy takes a file where the other commands take a
    // policy's name: a missing file says how to get at a named policy.
    let (code, err) = retrysim(&["schedule", "--policy", "platform"]);
    assert_eq!(code, Some(2));
    assert!(
        err.starts_with("error: --policy platform: no such file")
            && err.contains("--name platform"),
        "{err}"
    );
}

#[test]
fn check_reports_every_invalid_file_and_checks_the_rest() {
    let out = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .args([
            "check",
            "tests/bad/empty.json",
            "tests/good/minimal.json",
            "tests/bad/negative_rate.json",
            "tests/good/minimal.json",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the binary runs");
    assert_eq!(out.status.code(), Some(2));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout
            .lines()
            .filter(|l| l.starts_with("tests/good/minimal.json: ok"))
            .count(),
        2,
        "both valid files are checked, the one after an invalid one too:\n{stdout}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    for bad in ["tests/bad/empty.json", "tests/bad/negative_rate.json"] {
        assert!(
            stderr
                .lines()
                .any(|l| l.starts_with(&format!("error: {bad}"))),
            "{bad} is reported:\n{stderr}"
        );
    }
    // All valid: status 0.
    let (code, err) = retrysim(&[
        "check",
        "tests/good/minimal.json",
        "tests/good/minimal.json",
    ]);
    assert_eq!(code, Some(0), "{err}");
}

/// `run` names every file it refuses, not only the first, and runs none.
#[test]
fn run_reports_every_invalid_file_before_running_any() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("out").display().to_string();
    let (code, err) = retrysim(&[
        "run",
        "tests/bad/empty.json",
        "tests/good/minimal.json",
        "tests/bad/negative_rate.json",
        "-o",
        &out,
        "--no-plots",
    ]);
    assert_eq!(code, Some(2), "{err}");
    for bad in ["tests/bad/empty.json", "tests/bad/negative_rate.json"] {
        assert!(
            err.lines().any(|l| l.starts_with(&format!("error: {bad}"))),
            "{bad} is reported:\n{err}"
        );
    }
    assert!(!t.path().join("out").exists(), "nothing ran");
}

#[test]
fn an_endless_input_is_refused_not_read_into_memory() {
    // `/dev/zero` never ends; without a cap the process fills the memory.
    let (code, err) = retrysim(&["check", "/dev/zero"]);
    assert_eq!(code, Some(2));
    assert!(
        err.starts_with("error: /dev/zero: cannot read: it holds more than 16 MiB"),
        "{err}"
    );
    // The same from an endless pipe on standard input.
    let mut child = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .args(["check", "-"])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut stdin = child.stdin.take().expect("a pipe");
    let writer = std::thread::spawn(move || {
        let block = vec![b' '; 1 << 16];
        // Ends when the reader closes the pipe.
        while std::io::Write::write_all(&mut stdin, &block).is_ok() {}
    });
    let out = child.wait_with_output().expect("it ends");
    writer.join().expect("the writer stops");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("<stdin>: cannot read: it holds more than"),
        "{err}"
    );
}

/// Constraints no candidate could meet are refused before any run.
#[test]
fn tune_refuses_constraints_that_cannot_be_met() {
    for (flag, value, want) in [
        (
            "--max-task-age",
            "0s",
            "--max-task-age 0s: must be a duration greater than 0",
        ),
        (
            "--max-peak-load",
            "0",
            "--max-peak-load 0: must be a ratio greater than 0",
        ),
    ] {
        let (code, err) = retrysim(&["tune", "tests/good/minimal.json", flag, value]);
        assert_eq!(code, Some(2), "{flag}: {err}");
        assert!(err.contains(want), "{flag}: {err}");
    }
}
