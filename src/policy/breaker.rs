//! Client-side circuit breaker: stops sending attempts while the recent
//! failure rate is high. (Placeholder: always closed until the breakers
//! issue lands.)

use crate::scenario::spec::BreakerSpec;
use crate::time::Nanos;

/// The live state of one breaker.
#[derive(Clone, Debug)]
pub struct Breaker {
    spec: BreakerSpec,
}

impl Breaker {
    /// A closed breaker.
    pub fn new(spec: &BreakerSpec) -> Breaker {
        Breaker { spec: spec.clone() }
    }

    /// The spec this breaker was built from.
    pub fn spec(&self) -> &BreakerSpec {
        &self.spec
    }

    /// May an attempt be sent at `now`? A refused call fails fast and is not
    /// an attempt at the backend.
    pub fn allow(&mut self, _now: Nanos) -> bool {
        true
    }

    /// Records the outcome of an attempt that was sent.
    pub fn record(&mut self, _now: Nanos, _success: bool) {}
}
