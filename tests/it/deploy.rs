//! The files in `deploy/` work as written: the Slurm script run with the
//! variables Slurm sets and a stand-in `retrysim` that records its
//! arguments, and the Kubernetes files read as YAML and checked for the
//! fields they need (the image's user, a pull policy that works with a
//! locally loaded image, the storage they ask for, the same command in
//! the Indexed Job and the one-shard rerun).

use serde_json::Value;
use std::path::Path;

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap()
}

/// The lines of `text` that are not comments.
fn code(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs `deploy/slurm-array.sh` in a temporary directory with `vars` set
/// and a `retrysim` on the PATH that writes its arguments, one a line, to
/// `args.txt`. Returns the exit status, the arguments (`None` when it was
/// not called) and stderr.
#[cfg(unix)]
fn slurm(vars: &[(&str, &str)]) -> (Option<i32>, Option<Vec<String>>, String) {
    use std::os::unix::fs::PermissionsExt;
    let t = tempfile::tempdir().unwrap();
    let bin = t.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let fake = bin.join("retrysim");
    std::fs::write(
        &fake,
        "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > \"$ARGS_FILE\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let args_file = t.path().join("args.txt");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/slurm-array.sh");
    let mut cmd = std::process::Command::new("bash");
    cmd.arg(&script)
        .current_dir(t.path())
        .env_clear()
        .env(
            "PATH",
            format!(
                "{}:{}",
                bin.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .env("ARGS_FILE", &args_file);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let o = cmd.output().unwrap();
    let args = std::fs::read_to_string(&args_file)
        .ok()
        .map(|s| s.lines().map(str::to_string).collect());
    (
        o.status.code(),
        args,
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The value after `flag` in `args`.
fn after<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    let i = args.iter().position(|a| a == flag)?;
    args.get(i + 1).map(String::as_str)
}

#[cfg(unix)]
#[test]
fn the_slurm_script_takes_the_shard_from_the_task_id_and_a_fixed_count() {
    // A whole array, --array=0-9: task 0 is shard 1/10.
    let whole = [
        ("SLURM_ARRAY_TASK_ID", "0"),
        ("SLURM_ARRAY_TASK_MIN", "0"),
        ("SLURM_ARRAY_TASK_MAX", "9"),
        ("SLURM_ARRAY_TASK_COUNT", "10"),
        ("SLURM_CPUS_PER_TASK", "2"),
    ];
    let (code, args, err) = slurm(&whole);
    assert_eq!(code, Some(0), "{err}");
    let args = args.expect("retrysim was called");
    assert_eq!(after(&args, "--shard"), Some("1/10"));
    assert_eq!(after(&args, "-o"), Some("results/map/shard-01-of-10"));
    assert!(!args.iter().any(|a| a == "--shards"), "{args:?}");
    // Rerunning one failed task, `sbatch --array=2`: Slurm then says the
    // array has one task, starting at 2. Still shard 3 of 10, written
    // where --shards 10 writes it.
    let rerun = [
        ("SLURM_ARRAY_TASK_ID", "2"),
        ("SLURM_ARRAY_TASK_MIN", "2"),
        ("SLURM_ARRAY_TASK_MAX", "2"),
        ("SLURM_ARRAY_TASK_COUNT", "1"),
    ];
    let (code, args, err) = slurm(&rerun);
    assert_eq!(code, Some(0), "{err}");
    let args = args.unwrap();
    assert_eq!(after(&args, "--shard"), Some("3/10"));
    assert_eq!(after(&args, "-o"), Some("results/map/shard-03-of-10"));
    // A step, --array=0-8:2: task 4 is shard 5 of 10, not 3 of 5.
    let stepped = [
        ("SLURM_ARRAY_TASK_ID", "4"),
        ("SLURM_ARRAY_TASK_MIN", "0"),
        ("SLURM_ARRAY_TASK_MAX", "8"),
        ("SLURM_ARRAY_TASK_COUNT", "5"),
        ("SLURM_ARRAY_TASK_STEP", "2"),
    ];
    let (code, args, err) = slurm(&stepped);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(after(&args.unwrap(), "--shard"), Some("5/10"));
    // The last task, and one past it.
    let (_, args, _) = slurm(&[("SLURM_ARRAY_TASK_ID", "9")]);
    assert_eq!(
        after(&args.unwrap(), "-o"),
        Some("results/map/shard-10-of-10")
    );
    for bad in ["10", "-1", "x", ""] {
        let (code, args, err) = slurm(&[("SLURM_ARRAY_TASK_ID", bad)]);
        assert_ne!(code, Some(0), "{bad:?}");
        assert!(args.is_none(), "{bad:?}: retrysim ran");
        assert!(!err.is_empty(), "{bad:?}: no message");
    }
    // Outside a job array: refused with a word on how to submit it.
    let (code, args, err) = slurm(&[]);
    assert_ne!(code, Some(0));
    assert!(args.is_none());
    assert!(err.contains("sbatch"), "{err}");
}

#[test]
fn the_slurm_script_never_sizes_the_map_from_the_array() {
    let text = read("deploy/slurm-array.sh");
    assert!(!code(&text).contains("SLURM_ARRAY_TASK_COUNT"));
    assert!(code(&text).contains("SHARDS=10"));
    assert!(text.contains("#SBATCH --array=0-9"));
    assert!(text.contains("sbatch --array=2 deploy/slurm-array.sh"));
}

/// The documents of a YAML file.
fn documents(path: &str) -> Vec<Value> {
    serde_saphyr::from_multiple::<Value>(&read(path)).unwrap()
}

/// The uid and gid of the Dockerfile's `USER` in the final stage.
fn image_user() -> (u64, u64) {
    let docker = read("deploy/Dockerfile");
    let user = docker
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("USER "))
        .expect("the Dockerfile states its USER");
    let (u, g) = user.trim().split_once(':').expect("USER uid:gid");
    (u.parse().unwrap(), g.parse().unwrap())
}

/// The Jobs of `docs`, by name.
fn jobs(docs: &[Value]) -> Vec<(&str, &Value)> {
    docs.iter()
        .filter(|d| d["kind"] == "Job")
        .map(|d| (d["metadata"]["name"].as_str().unwrap(), d))
        .collect()
}

#[test]
fn the_kubernetes_files_run_as_the_images_user_with_a_local_image() {
    let (uid, gid) = image_user();
    assert_eq!((uid, gid), (65532, 65532), "distroless nonroot");
    let mut docs = documents("deploy/k8s-indexed-job.yaml");
    let rerun = documents("deploy/k8s-rerun-shard.yaml");
    docs.extend(rerun.iter().cloned());
    let all = jobs(&docs);
    assert_eq!(
        all.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        ["retrysim-map", "retrysim-merge", "retrysim-map-rerun"]
    );
    for (name, job) in &all {
        let pod = &job["spec"]["template"]["spec"];
        let sc = &pod["securityContext"];
        assert_eq!(sc["runAsUser"], uid, "{name}");
        assert_eq!(sc["runAsGroup"], gid, "{name}");
        assert_eq!(sc["fsGroup"], gid, "{name}");
        assert_eq!(sc["runAsNonRoot"], true, "{name}");
        assert_eq!(pod["restartPolicy"], "Never", "{name}");
        for c in pod["containers"].as_array().unwrap() {
            assert_eq!(c["imagePullPolicy"], "IfNotPresent", "{name}");
            assert_eq!(c["volumeMounts"][0]["mountPath"], "/results", "{name}");
        }
        assert_eq!(
            pod["volumes"][0]["persistentVolumeClaim"]["claimName"], "retrysim-results",
            "{name}"
        );
    }
    // The claim asks for a volume every pod can write, and the header
    // says what storage class that takes.
    let claim = docs
        .iter()
        .find(|d| d["kind"] == "PersistentVolumeClaim")
        .unwrap();
    assert_eq!(claim["metadata"]["name"], "retrysim-results");
    assert_eq!(claim["spec"]["accessModes"][0], "ReadWriteMany");
    let text = read("deploy/k8s-indexed-job.yaml");
    assert!(text.contains("storage class") && text.contains("storageClassName"));
}

#[test]
fn the_indexed_job_and_its_rerun_run_the_same_shards() {
    let docs = documents("deploy/k8s-indexed-job.yaml");
    let rerun = documents("deploy/k8s-rerun-shard.yaml");
    let all = jobs(&docs);
    let map = all.iter().find(|(n, _)| *n == "retrysim-map").unwrap().1;
    let spec = &map["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    let completions = spec["completions"].as_u64().unwrap();
    let container = &spec["template"]["spec"]["containers"][0];
    let args: Vec<String> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    // The shard count is the Job's own, fixed, as many as its indexes.
    assert_eq!(
        after(&args, "--shards"),
        Some(completions.to_string().as_str())
    );
    assert!(!args.iter().any(|a| a == "--shard"));
    // The rerun is the same command told one index.
    let one = jobs(&rerun)[0].1;
    let c = &one["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["args"], container["args"]);
    assert_eq!(c["image"], container["image"]);
    let env = c["env"].as_array().unwrap();
    let index = env
        .iter()
        .find(|e| e["name"] == "JOB_COMPLETION_INDEX")
        .expect("the rerun names its index");
    let i: u64 = index["value"].as_str().unwrap().parse().unwrap();
    assert!(i < completions);
    assert!(one["spec"].get("completionMode").is_none());
    // The headers name the folders as written (zero-padded) and tell how
    // to wait for a Job that may fail and how to rerun one shard.
    let text = read("deploy/k8s-indexed-job.yaml");
    assert!(text.contains("shard-01-of-10") && text.contains("shard-10-of-10"));
    assert!(!text.contains("kubectl wait --for=condition=complete job/retrysim-map "));
    assert!(text.contains("Complete|Failed"));
    assert!(text.contains("failedIndexes") && text.contains("k8s-rerun-shard.yaml"));
    let rerun_text = read("deploy/k8s-rerun-shard.yaml");
    assert!(rerun_text.contains(&format!("shard-0{}-of-10", i + 1)));
}
