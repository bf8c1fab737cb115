//! A process-wide request to stop: set by the command line when the user
//! presses Ctrl-C or the process gets SIGTERM or SIGHUP, read by every run
//! every few thousand events (and by report writers between pieces) so
//! workers stop promptly. It never changes what a run computes, only
//! whether it finishes.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

/// The signal that asked first (0: none, or a stop not from a signal).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// The number of SIGINT (Ctrl-C), whose exit status 130 an interruption
/// has when no signal is known.
const SIGINT: i32 = 2;

/// Asks every run in progress (and every later one) to stop.
pub fn request() {
    STOP.store(true, Ordering::Relaxed);
}

/// Asks every run to stop because of the signal numbered `signal`; the
/// first signal is kept for [`exit_code`]. Only atomic operations: safe
/// in a signal handler.
pub fn request_by(signal: i32) {
    let _ = SIGNAL.compare_exchange(0, signal, Ordering::Relaxed, Ordering::Relaxed);
    request();
}

/// Whether a stop was requested.
#[inline]
pub fn requested() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// The signal that asked to stop first, if one did.
pub fn signal() -> Option<i32> {
    match SIGNAL.load(Ordering::Relaxed) {
        0 => None,
        s => Some(s),
    }
}

/// The exit status of a command ended by the stop: 128 + the signal's
/// number, as shells report it (130 for Ctrl-C, 143 for SIGTERM, 129 for
/// SIGHUP); 130 when no signal is known.
pub fn exit_code() -> u8 {
    let s = signal().unwrap_or(SIGINT);
    u8::try_from(128 + s).unwrap_or(128 + SIGINT as u8)
}
