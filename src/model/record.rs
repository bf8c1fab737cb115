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

use super::requests::Job;

/// The record's state, and the transactions between their read and their
/// write.
#[derive(Clone, Debug, Default)]
pub struct Record {
    /// Bumped by every commit. Wraps; a read and its write are never 2^32
    /// commits apart.
    version: u32,
    /// Open transactions by id: the attempt and the version it read.
    /// Ids are reused once a transaction closes.
    txns: Vec<(Job, u32)>,
    free: Vec<u32>,
    /// Transactions between their read and their write.
    open: u64,
}

impl Record {
    /// A read by `job`: opens a transaction that remembers the version it
    /// saw, and returns its id.
    pub fn read(&mut self, job: Job) -> u32 {
        self.open += 1;
        let entry = (job, self.version);
        match self.free.pop() {
            Some(id) => {
                self.txns[id as usize] = entry;
                id
            }
            None => {
                self.txns.push(entry);
                (self.txns.len() - 1) as u32
            }
        }
    }

    /// The attempt that opened transaction `txn`.
    pub fn job(&self, txn: u32) -> Job {
        self.txns[txn as usize].0
    }

    /// Transactions between their read and their write.
    pub fn open(&self) -> u64 {
        self.open
    }

    /// The write of transaction `txn`: closes it, and commits (returns
    /// true, bumping the version) when nobody committed since its read.
    /// `may_commit` false (an error burst, an outage) closes it without
    /// committing.
    pub fn write(&mut self, txn: u32, may_commit: bool) -> Option<bool> {
        self.open -= 1;
        self.free.push(txn);
        let seen = self.txns[txn as usize].1;
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

    fn job(slot: u32) -> Job {
        Job {
            slot,
            gen: 0,
            attempt: 1,
        }
    }

    #[test]
    fn the_first_writer_wins() {
        let mut r = Record::default();
        let a = r.read(job(0));
        let b = r.read(job(1));
        assert_eq!(r.open(), 2);
        assert_eq!(r.job(b), job(1));
        assert_eq!(r.write(a, true), Some(true));
        assert_eq!(r.write(b, true), Some(false), "b's read is stale");
        assert_eq!(r.open(), 0);
        let c = r.read(job(2));
        assert_eq!(c, b, "closed ids are reused");
        assert_eq!(r.write(c, false), None, "a failed write changes nothing");
        let d = r.read(job(3));
        assert_eq!(r.write(d, true), Some(true));
    }
}
