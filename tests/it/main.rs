//! The integration tests, one module per area, built as one binary so a
//! clean `cargo test` links the library into one test executable instead
//! of one per file.

mod architecture;
mod assess;
mod atomic_reports;
mod aws_adaptive;
mod bad_input;
mod cloud_tasks;
mod concurrency_backend;
mod contention;
mod crash;
mod deploy;
mod determinism;
mod dispatcher;
mod estimate;
mod fuzz;
mod gate;
mod hangs;
mod headers;
mod hedging;
mod import_deploy;
mod invariants;
mod load_spike;
mod map_cli;
mod perfetto;
mod pipes;
mod policy_amplification;
mod policy_budgets;
mod policy_cli;
mod policy_examples;
mod pool;
mod report_outputs;
mod report_waves;
mod shared_flags;
mod story_aws_jitter;
mod story_hotos;
mod story_spanner;
mod support;
mod sweep_cli;
mod theory;
mod tiers;
mod time_limits;
mod trace_input;
mod tune;
