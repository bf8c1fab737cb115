//! The files in `examples/` import cleanly, and the documented `describe`
//! sample gives the same schedule as the `cloud-tasks-default` preset.

use std::process::Command;

fn retrysim(args: &[&str]) -> (Option<i32>, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the binary runs");
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

/// Imports `file` with `kind` and writes its first policy to a temp file.
fn imported_policy(kind: &str, file: &str, dir: &tempfile::TempDir) -> String {
    let (code, out) = retrysim(&["import", kind, file]);
    assert_eq!(code, Some(0), "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("import prints JSON");
    let path = dir.path().join(format!("{kind}.json"));
    std::fs::write(&path, v["policies"][0].to_string()).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn the_describe_sample_schedules_like_the_default_preset() {
    let dir = tempfile::tempdir().unwrap();
    let policy = imported_policy("gcloud", "examples/queue.yaml", &dir);
    let (code, imported) = retrysim(&["schedule", "--policy", &policy, "--csv"]);
    assert_eq!(code, Some(0));
    let (_, preset) = retrysim(&["schedule", "--preset", "cloud-tasks-default", "--csv"]);
    assert_eq!(imported, preset);
    let (_, text) = retrysim(&["schedule", "--policy", &policy]);
    assert!(text.contains("84.8 h"), "{text}");
}

#[test]
fn the_service_config_example_imports_with_throttling() {
    let dir = tempfile::tempdir().unwrap();
    let policy = imported_policy("grpc", "examples/service_config.json", &dir);
    let text = std::fs::read_to_string(&policy).unwrap();
    assert!(text.contains("token_bucket"), "{text}");
    let (code, out) = retrysim(&["schedule", "--policy", &policy]);
    assert_eq!(code, Some(0));
    assert!(out.contains("over 3 retries"), "{out}");
}
