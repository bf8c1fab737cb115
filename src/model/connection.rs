//! The clients' connections to a backend that may crash: one channel per
//! scope (per client, per group, or one for all), each following the
//! policy's `reconnect` schedule ([`crate::policy::reconnect`]).
//!
//! Only a policy with `reconnect` on a tier with a `crash` fault has any:
//! elsewhere an attempt opens a connection of its own, as it always did,
//! and no state is kept.

use crate::engine::SimRng;
use crate::policy::reconnect::Channel;
use crate::policy::scope::Scoped;
use crate::policy::Reconnect;
use crate::time::Nanos;
use rand::Rng;

/// The channels of one tier's clients and what they need to know of the
/// backend.
#[derive(Clone, Debug)]
pub struct Connections {
    schedule: Reconnect,
    channels: Scoped<Channel>,
    /// The backend's crash windows `[start, end)`, sorted by start.
    crashes: Vec<(Nanos, Nanos)>,
    /// Jitter of the reconnection attempts (drawn only for refused ones).
    rng: SimRng,
}

impl Connections {
    /// The channels of `clients` clients following `schedule` to a
    /// backend crashed in `crashes`; `None` when there is nothing to keep
    /// (no crash).
    pub fn new(
        schedule: Reconnect,
        clients: u32,
        crashes: Vec<(Nanos, Nanos)>,
        rng: SimRng,
    ) -> Option<Connections> {
        if crashes.is_empty() {
            return None;
        }
        Some(Connections {
            channels: Scoped::new(schedule.scope, clients, Channel::default),
            schedule,
            crashes,
            rng,
        })
    }

    /// Whether `client`'s channel is connected at `now` (its reconnection
    /// attempts due by then are played).
    pub fn connected(&mut self, now: Nanos, client: u32) -> bool {
        let rng = &mut self.rng;
        self.channels
            .of(client)
            .connected(now, &self.crashes, &self.schedule, || rng.random::<f64>())
    }
}
