//! The network between clients and the backend: one delay per hop, drawn
//! from the scenario's `network_delay` (none = instant), from its own
//! random stream.

use super::dist::Dist;
use crate::engine::SimRng;
use crate::time::Nanos;

/// One-way delays of the run.
#[derive(Clone, Debug)]
pub struct Network {
    delay: Option<Dist>,
    rng: SimRng,
}

impl Network {
    /// A network with hops drawn from `delay` (none: zero).
    pub fn new(delay: Option<Dist>, rng: SimRng) -> Network {
        Network { delay, rng }
    }

    /// The delay of the next hop.
    #[inline]
    pub fn hop(&mut self) -> Nanos {
        match &self.delay {
            None => 0,
            Some(Dist::Constant(v)) => *v as Nanos,
            Some(d) => d.sample(&mut self.rng),
        }
    }

    /// Whether every hop takes no time (no `network_delay`, or a constant
    /// zero): an attempt then reaches the backend within its send, and an
    /// answer reaches the client within the backend's step.
    pub fn instant(&self) -> bool {
        self.delay
            .as_ref()
            .is_none_or(|d| d.constant_value() == Some(0))
    }

    /// The hop delay when every hop takes the same time.
    pub fn constant(&self) -> Option<Nanos> {
        self.delay.as_ref().and_then(|d| d.constant_value())
    }
}
