//! Random streams. Every run owns its generators, all derived from
//! (scenario seed, replication, stream) so a run is a pure function of its
//! inputs, and the stream of new requests is the same for every policy
//! (common random numbers).

use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

/// The generator every stream uses: PCG 64-bit MCG, value-stable across
/// releases of its crate.
pub type SimRng = Pcg64Mcg;

/// Independent purposes that each get their own stream, so drawing more of
/// one (a policy that retries more) never shifts another (arrivals).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
pub enum Stream {
    /// Arrival times of new requests and the client each comes from.
    Arrivals = 1,
    /// Service times at the backend.
    Service = 2,
    /// Network delays of attempts and answers.
    Network = 3,
    /// Jitter of retry delays (and the other random choices of the
    /// clients' policies).
    Backoff = 4,
    /// Random fault outcomes (which attempts an `errors` fault fails).
    Faults = 5,
    /// Think times of closed-loop clients.
    Clients = 6,
    /// Jitter of the clients' reconnection attempts after a crash.
    Reconnect = 7,
    /// Which waiting attempt a client-side rate limiter serves next, when
    /// its order is random.
    Limiter = 11,
}

/// SplitMix64 finaliser: spreads nearby integers over the whole range.
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The generator for one stream of one replication.
pub fn stream(seed: u64, replication: u32, which: Stream) -> SimRng {
    keyed(seed, replication, which as u64)
}

/// The generator for one stream of downstream tier `tier` (1 = the first
/// below the top backend; 0 gives [`stream`]'s): independent of the other
/// tiers', so adding a tier never shifts the streams above it.
pub fn tier_stream(seed: u64, replication: u32, which: Stream, tier: u32) -> SimRng {
    keyed(seed, replication, which as u64 | u64::from(tier) << 8)
}

fn keyed(seed: u64, replication: u32, key: u64) -> SimRng {
    let a = mix64(seed ^ mix64(replication as u64 + 0x5151));
    let b = mix64(a ^ mix64(key));
    let lo = mix64(b);
    let hi = mix64(b ^ 0xA5A5_A5A5_A5A5_A5A5);
    SimRng::from_seed(((hi as u128) << 64 | lo as u128).to_le_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let a: u64 = stream(7, 0, Stream::Arrivals).random();
        let b: u64 = stream(7, 0, Stream::Arrivals).random();
        let c: u64 = stream(7, 0, Stream::Service).random();
        let d: u64 = stream(7, 1, Stream::Arrivals).random();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, d);
        let t0: u64 = tier_stream(7, 0, Stream::Service, 0).random();
        let t1: u64 = tier_stream(7, 0, Stream::Service, 1).random();
        assert_eq!(t0, c, "tier 0 is the top backend's stream");
        assert_ne!(t1, c);
    }

    #[test]
    fn stream_values_never_change() {
        // Pins the generator and the seed derivation: a crate update or a
        // refactor that changed these values would silently change every
        // recorded result in the README.
        let x: u64 = stream(1, 0, Stream::Arrivals).random();
        assert_eq!(format!("{x:016x}"), "c2d8be2ced91c203");
    }
}
