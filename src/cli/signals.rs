//! Ending on a signal. Ctrl-C (SIGINT), SIGTERM (`kill`, `timeout`, a CI
//! runner) and SIGHUP (a closed terminal) all ask every run to stop
//! ([`crate::engine::stop`]); the command then ends as it ends on Ctrl-C,
//! its report in progress abandoned, and exits 128 + the signal's number
//! (130, 143, 129). Runs check the request every few thousand events and
//! report writers between pieces, so that takes milliseconds; should the
//! command not have ended a second later (blocked opening a named pipe,
//! writing to a stuck disk) or at a second signal, it is ended from here:
//! the staging folders in progress are removed first
//! ([`crate::report::staging::abandon_all`]), then the process exits with
//! the same status.

use super::common;
use crate::engine::stop;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How long a stop may take before the process is ended from here.
pub const GRACE: Duration = Duration::from_secs(1);

/// Whether the interruption was said already (once per process).
static SAID: AtomicBool = AtomicBool::new(false);

/// Says on stderr, once per process, that the command was interrupted and
/// by what.
pub fn say_interrupted() {
    if SAID.swap(true, Ordering::SeqCst) {
        return;
    }
    let by = match stop::signal() {
        Some(15) => " by SIGTERM",
        Some(1) => " by SIGHUP",
        _ => "",
    };
    common::note(format_args!(
        "interrupted{by}; the report in progress was not written"
    ));
}

/// Ends the process now, as a stop ends it: staging folders removed, the
/// interruption said, the signal's exit status.
fn end_now() -> ! {
    crate::report::staging::abandon_all(GRACE);
    say_interrupted();
    std::process::exit(i32::from(stop::exit_code()));
}

/// Installs the handlers of SIGINT, SIGTERM and SIGHUP.
#[cfg(unix)]
pub fn install() {
    use std::sync::atomic::AtomicI32;
    /// The end of the pipe the handler wakes the watcher through.
    static WAKE: AtomicI32 = AtomicI32::new(-1);
    extern "C" fn on_signal(signal: libc::c_int) {
        // Only async-signal-safe calls: atomics and write(2).
        stop::request_by(signal);
        let fd = WAKE.load(Ordering::Relaxed);
        if fd >= 0 {
            let byte = 1u8;
            // SAFETY: writes one byte from a live local to an open pipe.
            unsafe {
                libc::write(fd, (&byte as *const u8).cast(), 1);
            }
        }
    }
    let mut fds = [-1; 2];
    // SAFETY: `fds` has room for the two descriptors pipe(2) returns.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return;
    }
    for fd in fds {
        // SAFETY: fcntl on descriptors this function owns.
        unsafe {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
    }
    // SAFETY: as above; a full pipe then drops a wake-up, never blocks.
    unsafe {
        libc::fcntl(fds[1], libc::F_SETFL, libc::O_NONBLOCK);
    }
    WAKE.store(fds[1], Ordering::Relaxed);
    let read_end = fds[0];
    let spawned = std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || watch(read_end));
    if spawned.is_err() {
        return;
    }
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: a zeroed sigaction is valid; the handler only does
        // async-signal-safe work.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// Waits on the read end `fd` of the wake-up pipe: after the first signal,
/// for [`GRACE`] or a second signal, then ends the process.
#[cfg(unix)]
fn watch(fd: libc::c_int) {
    if !wait_byte(fd, -1) {
        return;
    }
    let grace = i32::try_from(GRACE.as_millis()).unwrap_or(i32::MAX);
    wait_byte(fd, grace);
    end_now();
}

/// Waits up to `timeout_ms` (-1: for ever) for a byte on `fd` and reads
/// it; whether one came.
#[cfg(unix)]
fn wait_byte(fd: libc::c_int, timeout_ms: i32) -> bool {
    let mut poll = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    loop {
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut poll, 1, timeout_ms) };
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        if n <= 0 {
            return false;
        }
        let mut byte = 0u8;
        // SAFETY: reads one byte into a live local.
        return unsafe { libc::read(fd, (&mut byte as *mut u8).cast(), 1) } == 1;
    }
}

/// Installs the Ctrl-C handler: a first Ctrl-C asks the runs to stop, a
/// second ends the process.
#[cfg(not(unix))]
pub fn install() {
    let _ = ctrlc::set_handler(|| {
        if stop::requested() {
            end_now();
        }
        stop::request();
    });
}
