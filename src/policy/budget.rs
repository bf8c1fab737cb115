//! Retry budgets: per-client (or global) limits on how many retries may be
//! sent, whatever the backoff says. (Placeholder: allows every retry until
//! the budgets issue implements token_bucket, ratio and quota.)

use crate::scenario::spec::BudgetSpec;
use crate::time::Nanos;

/// The live state of one budget (one per client, or one for all clients).
#[derive(Clone, Debug)]
pub struct Budget {
    spec: BudgetSpec,
}

impl Budget {
    /// A fresh budget, as at the start of a run.
    pub fn new(spec: &BudgetSpec) -> Budget {
        Budget { spec: spec.clone() }
    }

    /// The spec this budget was built from.
    pub fn spec(&self) -> &BudgetSpec {
        &self.spec
    }

    /// A new request's first attempt is sent at `now`.
    pub fn on_request(&mut self, _now: Nanos) {}

    /// An attempt succeeded at `now`; `was_retry` when it was not the
    /// request's first attempt.
    pub fn on_success(&mut self, _now: Nanos, _was_retry: bool) {}

    /// An attempt failed at `now` with a status the policy retries on
    /// (called before `try_retry`).
    pub fn on_failure(&mut self, _now: Nanos) {}

    /// Asks to send a retry at `now` (after a timeout when `timeout`);
    /// withdraws from the budget and returns true when allowed.
    pub fn try_retry(&mut self, _now: Nanos, _timeout: bool) -> bool {
        true
    }
}
