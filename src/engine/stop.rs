//! A process-wide request to stop: set by the command line when the user
//! presses Ctrl-C, read by every run every few thousand events so workers
//! stop promptly. It never changes what a run computes, only whether it
//! finishes.

use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

/// Asks every run in progress (and every later one) to stop.
pub fn request() {
    STOP.store(true, Ordering::Relaxed);
}

/// Whether a stop was requested.
#[inline]
pub fn requested() -> bool {
    STOP.load(Ordering::Relaxed)
}
