//! # retrysim
//!
//! A deterministic discrete-event simulator of retry storms: thousands to
//! millions of clients retrying against a capacity-limited backend with
//! scheduled faults, one run per retry policy on identical traffic.
//!
//! ## Concepts
//!
//! - **Traffic** (`model::traffic`): new requests over time, from clients.
//! - **Backend** (`model::backend`): workers in front of a waiting room, or
//!   one record under optimistic concurrency.
//! - **Fault** (`model::faults`): outages, blackholes, slowdowns, lost
//!   capacity and error bursts, scheduled in time.
//! - **Policy** (`policy`): what a client does after a failed attempt.
//! - **Run** (`model::run`): one policy × one replication, single-threaded
//!   and deterministic; runs go in parallel (`runner`).
//! - **Report** (`report`): CSV, JSON, plots and the terminal table, made
//!   from the metrics (`metrics`) the runs stream out.
//!
//! ## Layers
//!
//! Dependencies run one way, from the command line down to plain values;
//! `tests/it/architecture.rs` reads this table and fails when the code names a
//! module its row does not list, or when the table has a cycle. The engine
//! never sees the model; nothing in the simulation writes files. Each
//! module defines the errors it returns; `error`, just below the command
//! line, wraps them in one `Error`, and the command line (`cli`) alone
//! turns that into an exit status.
//!
//! | module | may use |
//! |---|---|
//! | `decimal` | — |
//! | `csv_text` | — |
//! | `json_text` | `decimal` |
//! | `time` | `decimal` |
//! | `status` | — |
//! | `math` | — |
//! | `check` | `decimal`, `time` |
//! | `engine` | `time` |
//! | `metrics` | `decimal`, `time` |
//! | `policy` | `check`, `decimal`, `status`, `time` |
//! | `scenario` | `check`, `decimal`, `math`, `policy`, `status`, `time` |
//! | `model` | `engine`, `math`, `metrics`, `policy`, `scenario`, `status`, `time` |
//! | `runner` | `engine`, `metrics`, `model`, `policy`, `scenario`, `status`, `time` |
//! | `sweep` | `csv_text`, `decimal`, `engine`, `metrics`, `runner`, `scenario`, `time` |
//! | `map` | `csv_text`, `decimal`, `metrics`, `runner`, `scenario`, `sweep`, `time` |
//! | `assess` | `decimal`, `map`, `metrics`, `model`, `policy`, `runner`, `scenario`, `status`, `time` |
//! | `tune` | `decimal`, `json_text`, `metrics`, `policy`, `runner`, `scenario`, `time` |
//! | `report` | `assess`, `csv_text`, `decimal`, `engine`, `gate`, `json_text`, `map`, `metrics`, `policy`, `scenario`, `sweep`, `time`, `tune` |
//! | `import` | `check`, `decimal`, `policy`, `scenario`, `status`, `time` |
//! | `gate` | `assess`, `decimal`, `import`, `scenario` |
//! | `error` | `assess`, `map`, `model`, `report`, `scenario`, `sweep` |
//! | `cli` | `assess`, `check`, `decimal`, `engine`, `error`, `gate`, `import`, `json_text`, `map`, `policy`, `report`, `runner`, `scenario`, `status`, `sweep`, `time`, `tune` |
//!
//! `docs/architecture.md` walks through the modules, follows one request
//! through the events, and lists the files to touch to add a fault kind, a
//! backoff, an output column or a command.

#![warn(missing_docs, unreachable_pub)]

pub mod assess;
pub mod check;
pub mod cli;
pub mod csv_text;
pub mod decimal;
pub mod engine;
pub mod error;
pub mod gate;
pub mod import;
pub mod json_text;
pub mod map;
pub mod math;
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
