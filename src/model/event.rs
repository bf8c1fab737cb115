//! Everything that can happen in a run, as one small enum the event queue
//! holds by value.

use super::requests::Job;
use crate::status::Status;

/// One event. Kept at 16 bytes (checked below) so a queue entry with its
/// time and sequence number is 32 bytes.
#[derive(Clone, Copy, Debug)]
pub enum Ev {
    /// The next open-mode or burst arrival.
    Arrival,
    /// A closed-mode client sends its next request.
    ClientNext {
        /// The client.
        client: u32,
    },
    /// A backoff timer fired: the next attempt of a request at tier
    /// `tier` (0 = the top backend; below, a call) goes. The key is the
    /// request and its attempt count when the timer was set, so a timer
    /// left behind when an operator forced an attempt is stale.
    Send {
        /// The tier.
        tier: u8,
        /// The request and its attempt count when the timer was set.
        key: Job,
    },
    /// An attempt reaches the backend over a network with a delay
    /// (without one, it does so within its send).
    AtBackend(Job),
    /// A worker of tier `tier` finishes what it was doing.
    Done {
        /// The tier.
        tier: u8,
        /// The worker (the slot in service, for a concurrency backend).
        worker: u32,
        /// Its generation when the work started.
        wgen: u32,
    },
    /// An answer reaches the client over a network with a delay (without
    /// one, it does so within the backend's step); the flag: it came after
    /// response headers (an `outage` with `headers_first`).
    Response(Job, Status, bool),
    /// The caller (a client at the top, a worker of the tier above below)
    /// gives up waiting for an attempt at tier `tier`.
    Timeout {
        /// The tier.
        tier: u8,
        /// The attempt.
        job: Job,
    },
    /// The client gives up the whole request.
    Deadline {
        /// The request's slot.
        slot: u32,
        /// Its generation when the request arrived.
        gen: u32,
    },
    /// A fault or operator action of tier `tier` starts or ends.
    Edge {
        /// The tier.
        tier: u8,
    },
    /// The dispatcher's bucket has a token again.
    DispatchTick,
    /// The operator's next RunTask call (a `force_run` paced at its quota).
    RunTask,
    /// Contention backend: the conditional write of an open transaction
    /// reaches the record.
    Write {
        /// The transaction.
        txn: u32,
    },
    /// A hedged request's next hedge is due.
    Hedge {
        /// The request's slot.
        slot: u32,
        /// Its generation when the timer was set.
        gen: u32,
    },
    /// A client-side rate limiter may have a token for the head of its
    /// queue.
    Limiter {
        /// The limiter instance.
        index: u32,
        /// Its wake generation when this wake-up was planned.
        wgen: u32,
    },
    /// The attempt a worker of tier `tier` (0 = the top backend) serves
    /// while it waits for the tier below has timed out for its caller:
    /// the worker stops waiting.
    HoldOver {
        /// The worker's tier.
        tier: u8,
        /// The worker.
        worker: u32,
        /// Its generation when it started waiting.
        wgen: u32,
    },
}

const _: () = assert!(std::mem::size_of::<Ev>() == 16, "Ev must stay 16 bytes");
