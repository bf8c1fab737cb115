//! Helpers the integration tests share.

/// Asserts that a command (run with `output()`) exited with status 0,
/// showing what it wrote to stderr when it did not.
pub fn assert_ok(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
