//! How events run: time-ordered event queue and random streams. The engine
//! knows nothing of requests or retries.

pub mod oldest;
pub mod queue;
pub mod ring;
pub mod rng;
pub mod stop;
pub mod watch;

pub use oldest::OldestFirst;
pub use queue::{EventQueue, LaneId, Ticket};
pub use rng::{stream, tier_stream, SimRng, Stream};
