//! Who shares a budget's or a breaker's state: each client its own, or all
//! clients one.

use serde::{Deserialize, Serialize};

/// Where a retry budget's state lives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetScope {
    #[default]
    Client,
    Global,
}

impl BudgetScope {
    /// The scope in words: `per client`, `global`.
    pub fn describe(self) -> &'static str {
        match self {
            BudgetScope::Client => "per client",
            BudgetScope::Global => "global",
        }
    }
}
