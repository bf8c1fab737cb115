//! Who shares a budget's, a limiter's or a breaker's state: each client its
//! own, all clients one, or each group of `N` consecutive clients one.
//!
//! A group of 1 is exactly "client" and a group as large as the client
//! count is exactly "global": the instance a client uses is
//! `client / group_size`, so both ends of the range fall on the other two
//! scopes (`tests/it/policy_amplification.rs` checks the summaries are
//! byte-identical).

use crate::check::Problems;
use crate::decimal::count;
use serde::{Deserialize, Serialize};

/// Where a retry budget's (or a limiter's, a breaker's) state lives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetScope {
    /// One instance per client (`"client"`, the default).
    #[default]
    Client,
    /// One instance for every client (`"global"`).
    Global,
    /// One instance per group of this many consecutive clients
    /// (`{"group": N}`): clients `0..N` share the first, `N..2N` the next…
    Group(u32),
}

impl BudgetScope {
    /// The scope in words: `per client`, `global`, `per group of 100 clients`.
    pub fn describe(self) -> String {
        match self {
            BudgetScope::Client => "per client".into(),
            BudgetScope::Global => "global".into(),
            BudgetScope::Group(n) => {
                format!("per group of {}", count(f64::from(n), "client", "clients"))
            }
        }
    }

    /// How many clients share one instance, among `clients` clients.
    pub fn group_size(self, clients: u32) -> u32 {
        match self {
            BudgetScope::Client => 1,
            BudgetScope::Global => clients.max(1),
            BudgetScope::Group(n) => n.max(1),
        }
    }

    /// How many instances `clients` clients need.
    pub fn instances(self, clients: u32) -> u32 {
        clients.max(1).div_ceil(self.group_size(clients))
    }

    /// Checks the group size; `path` ends at `scope`.
    pub fn check(self, path: &str, c: &mut Problems) {
        if self == BudgetScope::Group(0) {
            c.err(
                format!("{path}.group"),
                "must be at least 1 (1 = one per client)",
            );
        }
    }
}

/// One instance of some state per scope, and the rule that maps a client
/// to its instance.
#[derive(Clone, Debug)]
pub struct Scoped<T> {
    items: Vec<T>,
    group: u32,
}

impl<T> Scoped<T> {
    /// `make()` once per instance `scope` needs for `clients` clients.
    pub fn new(scope: BudgetScope, clients: u32, make: impl Fn() -> T) -> Scoped<T> {
        let group = scope.group_size(clients);
        let n = scope.instances(clients) as usize;
        Scoped {
            items: (0..n).map(|_| make()).collect(),
            group,
        }
    }

    /// The instance that holds `client`'s state.
    #[inline]
    pub fn of(&mut self, client: u32) -> &mut T {
        let i = self.index_of(client);
        &mut self.items[i]
    }

    /// The index of `client`'s instance.
    #[inline]
    pub fn index_of(&self, client: u32) -> usize {
        ((client / self.group) as usize).min(self.items.len() - 1)
    }

    /// Instance `i`.
    #[inline]
    pub fn get_mut(&mut self, i: usize) -> &mut T {
        &mut self.items[i]
    }

    /// Every instance, in order.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.items.iter()
    }

    /// How many instances there are.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether there are none (never, once built).
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_of_one_and_of_everyone_are_the_other_scopes() {
        for clients in [1, 7, 100] {
            assert_eq!(BudgetScope::Group(1).instances(clients), clients);
            assert_eq!(BudgetScope::Client.instances(clients), clients);
            assert_eq!(BudgetScope::Group(clients).instances(clients), 1);
            assert_eq!(BudgetScope::Global.instances(clients), 1);
        }
        // 10 clients in groups of 4: 0-3, 4-7, 8-9.
        let mut s = Scoped::new(BudgetScope::Group(4), 10, || 0u32);
        assert_eq!(s.len(), 3);
        for c in 0..10 {
            *s.of(c) += 1;
        }
        assert_eq!(s.iter().copied().collect::<Vec<_>>(), vec![4, 4, 2]);
    }

    #[test]
    fn scope_reads_as_written() {
        let g: BudgetScope = serde_json::from_str(r#"{"group": 100}"#).unwrap();
        assert_eq!(g, BudgetScope::Group(100));
        let c: BudgetScope = serde_json::from_str(r#""global""#).unwrap();
        assert_eq!(c, BudgetScope::Global);
        assert_eq!(g.describe(), "per group of 100 clients");
        assert_eq!(BudgetScope::Group(1).describe(), "per group of 1 client");
    }
}
