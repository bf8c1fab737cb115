//! # retrysim
//!
//! A deterministic discrete-event simulator of retry storms: thousands to
//! millions of clients retrying against a capacity-limited backend with
//! scheduled faults, one run per retry policy on identical traffic.
//!
//! ## Concepts
//!
//! - **Traffic** (`model::traffic`): new requests over time, from clients.
//! - **Backend** (`model::backend`): workers in front of a waiting room.
//! - **Fault** (`model::faults`): outages, blackholes, slowdowns, lost
//!   capacity and error bursts, scheduled in time.
//! - **Policy** (`policy`): what a client does after a failed attempt.
//! - **Run** (`model::run`): one policy × one replication, single-threaded
//!   and deterministic; runs go in parallel (`runner`).
//! - **Report** (`report`): CSV, JSON, plots and the terminal table, made
//!   from the metrics (`metrics`) the runs stream out.
//!
//! Dependencies run one way: cli → scenario / report → model → engine /
//! policy / metrics. The engine never sees the model; nothing in the
//! simulation writes files. The error types (`error`) sit below every
//! module that returns them and above `policy` only; the command line
//! (`cli`) alone turns them into exit statuses.

pub mod check;
pub mod cli;
pub mod decimal;
pub mod engine;
pub mod error;
pub mod import;
pub mod metrics;
pub mod model;
pub mod policy;
pub mod report;
pub mod runner;
pub mod scenario;
pub mod status;
pub mod sweep;
pub mod time;
pub mod tune;
