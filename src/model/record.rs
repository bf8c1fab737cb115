//! The `contention` backend: optimistic concurrency on one record, the
//! model of AWS's "Exponential Backoff and Jitter" experiment (2015).
//!
//! There are no workers and no queue. An attempt travels one network hop to
//! the record and reads its version; its conditional write reaches the
//! record one network round trip (two more hops) after the read and commits
//! only when no other write committed in between (the version is unchanged),
//! bumping the version; otherwise it fails with `aborted`. The answer
//! travels back one hop. Every attempt is one write call, so attempts are
//! the write calls AWS counted.
//!
//! The client side is the queue backend's (`run.rs`). Faults act on the
//! record: during an `outage` reads and writes fail with its status, during
//! a `blackhole` they are never answered, an `errors` burst fails that share
//! of the writes that would commit; `slowdown` and `capacity` have nothing
//! to act on. In the time series, `offered` counts reads, `wasted` writes
//! whose client had already given up, `queue_len` transactions open between
//! read and write, and capacity is 0 (the record has no throughput limit).

/// The record's state.
#[derive(Clone, Debug, Default)]
pub struct Record {
    /// Bumped by every commit. Wraps; a read and its write are never 2^32
    /// commits apart.
    version: u32,
    /// Transactions between their read and their write.
    pub open: u64,
}

impl Record {
    /// A read: opens a transaction and returns the version it saw.
    pub fn read(&mut self) -> u32 {
        self.open += 1;
        self.version
    }

    /// The write of a transaction that read `seen`: closes it, and commits
    /// (returns true, bumping the version) when nobody committed since.
    /// `may_commit` false (an error burst, an outage) closes it without
    /// committing.
    pub fn write(&mut self, seen: u32, may_commit: bool) -> Option<bool> {
        self.open -= 1;
        if seen != self.version {
            return Some(false);
        }
        if !may_commit {
            return None;
        }
        self.version = self.version.wrapping_add(1);
        Some(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_writer_wins() {
        let mut r = Record::default();
        let a = r.read();
        let b = r.read();
        assert_eq!(r.open, 2);
        assert_eq!(r.write(a, true), Some(true));
        assert_eq!(r.write(b, true), Some(false), "b's read is stale");
        assert_eq!(r.open, 0);
        let c = r.read();
        assert_eq!(r.write(c, false), None, "a failed write changes nothing");
        let d = r.read();
        assert_eq!(r.write(d, true), Some(true));
    }
}
