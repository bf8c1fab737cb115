//! Recording one request's story for `run --trace N`, in two passes over
//! the same deterministic run (replication 0 of a policy):
//!
//! 1. **Choose** ([`Story::choose`]): every top-level request gets an id,
//!    its place in the order requests are opened. As requests end, a
//!    bounded keep-best structure holds the ⌈N/3⌉ slowest (start to end;
//!    ties to the lower id), the first 2⌈N/3⌉ given up, and the N ids of
//!    smallest fixed-seed hash (a sample that does not depend on anything
//!    but the id). [`Story::chosen`] then picks N distinct ids: the
//!    ⌈N/3⌉ slowest, the first ⌈N/3⌉ given up that are not among them,
//!    and the rest from the sample. Requests still open
//!    when the run ends are not chosen.
//! 2. **Record** ([`Story::record`]): the same run again, keeping the
//!    marks ([`Mark`]) of the chosen requests only.
//!
//! A run is single-threaded and deterministic, so the ids, the choice and
//! the marks are the same on any thread count. Without `--trace` no story
//! exists and each hook is one test of an `Option` that is `None`; the
//! hooks are `#[cold]`, so the run's hot functions keep them out of line.

use crate::metrics::story::{Mark, Pick, Tale};
use crate::model::requests::GiveUp;
use crate::status::Status;
use crate::time::Nanos;

/// Marks kept per request: about 160 attempts with their answers and
/// backoffs; a request with more keeps its end and says it was cut.
pub const MAX_MARKS: usize = 480;

/// No id / no tale for a slot.
const NONE: u64 = u64::MAX;

/// The recorder a run carries when traced.
#[derive(Clone, Debug)]
pub struct Story {
    /// The id of the request open in each slot.
    slot_id: Vec<u64>,
    /// The next id to give.
    next_id: u64,
    mode: Mode,
}

#[derive(Clone, Debug)]
enum Mode {
    Choose {
        n: usize,
        /// (duration, id), at most ⌈n/3⌉, the longest kept.
        slowest: Vec<(Nanos, u64)>,
        /// The first 2⌈n/3⌉ ids given up.
        gave_up: Vec<u64>,
        /// (hash, id), at most n, the smallest hashes kept.
        sample: Vec<(u64, u64)>,
    },
    Record {
        /// The chosen (id, why), sorted by id.
        chosen: Vec<(u64, Pick)>,
        /// The index in `tales` of the request open in each slot.
        slot_tale: Vec<u64>,
        tales: Vec<Tale>,
    },
}

/// SplitMix64 of `id` under a fixed seed: the sample's order.
fn hash(id: u64) -> u64 {
    let mut z = id.wrapping_add(0x9E37_79B9_7F4A_7C15 ^ 0x7472_6163_6573_6565);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Sets `v[i] = x`, growing `v` with [`NONE`].
fn put(v: &mut Vec<u64>, i: u32, x: u64) {
    let i = i as usize;
    if v.len() <= i {
        v.resize(i + 1, NONE);
    }
    v[i] = x;
}

impl Story {
    /// The first pass: choose `n` requests.
    pub fn choose(n: usize) -> Story {
        Story {
            slot_id: Vec::new(),
            next_id: 0,
            mode: Mode::Choose {
                n,
                slowest: Vec::new(),
                gave_up: Vec::new(),
                sample: Vec::new(),
            },
        }
    }

    /// The second pass: record the requests `chosen` (from [`Story::chosen`]).
    pub fn record(mut chosen: Vec<(u64, Pick)>) -> Story {
        chosen.sort_unstable();
        Story {
            slot_id: Vec::new(),
            next_id: 0,
            mode: Mode::Record {
                chosen,
                slot_tale: Vec::new(),
                tales: Vec::new(),
            },
        }
    }

    /// After the first pass: up to `n` distinct ids, each with why it was
    /// chosen, slowest first, then given up, then the sample.
    pub fn chosen(&self) -> Vec<(u64, Pick)> {
        let Mode::Choose {
            n,
            slowest,
            gave_up,
            sample,
        } = &self.mode
        else {
            return Vec::new();
        };
        let mut slow = slowest.clone();
        slow.sort_unstable_by(|a, b| b.cmp(a));
        let mut sampled = sample.clone();
        sampled.sort_unstable();
        let third = n.div_ceil(3);
        let mut out: Vec<(u64, Pick)> = Vec::new();
        let mut take = |ids: &mut dyn Iterator<Item = u64>, why: Pick, most: usize| {
            let mut taken = 0;
            for id in ids {
                if out.len() == *n || taken == most {
                    break;
                }
                if out.iter().all(|&(o, _)| o != id) {
                    out.push((id, why));
                    taken += 1;
                }
            }
        };
        take(
            &mut slow.iter().map(|&(_, key)| u64::MAX - key),
            Pick::Slowest,
            third,
        );
        take(&mut gave_up.iter().copied(), Pick::GaveUp, third);
        take(&mut sampled.iter().map(|&(_, id)| id), Pick::Sample, *n);
        out
    }

    /// The recorded tales, in the order requests were opened.
    pub fn into_tales(self) -> Vec<Tale> {
        match self.mode {
            Mode::Record { tales, .. } => tales,
            Mode::Choose { .. } => Vec::new(),
        }
    }

    /// The tale of the request in `slot`, when it is recorded.
    fn tale(&mut self, slot: u32) -> Option<&mut Tale> {
        let Mode::Record {
            slot_tale, tales, ..
        } = &mut self.mode
        else {
            return None;
        };
        let i = *slot_tale.get(slot as usize)?;
        tales.get_mut(usize::try_from(i).ok()?)
    }

    fn mark(&mut self, slot: u32, m: Mark) {
        if let Some(t) = self.tale(slot) {
            if t.marks.len() < MAX_MARKS {
                t.marks.push(m);
            } else {
                t.truncated = true;
            }
        }
    }

    /// A top-level request opened in `slot` by `client`.
    #[cold]
    pub fn opened(&mut self, slot: u32, now: Nanos, client: u32) {
        let id = self.next_id;
        self.next_id += 1;
        put(&mut self.slot_id, slot, id);
        if let Mode::Record {
            chosen,
            slot_tale,
            tales,
        } = &mut self.mode
        {
            if let Ok(i) = chosen.binary_search_by(|c| c.0.cmp(&id)) {
                put(slot_tale, slot, tales.len() as u64);
                tales.push(Tale {
                    id,
                    pick: chosen[i].1,
                    client,
                    start: now,
                    marks: Vec::new(),
                    truncated: false,
                    attempts: 0,
                });
            }
        }
    }

    /// An attempt of the request in `slot` was sent.
    #[cold]
    pub fn sent(&mut self, slot: u32, now: Nanos, attempt: u32, hedge: bool) {
        if let Some(t) = self.tale(slot) {
            t.attempts += 1;
        }
        self.mark(
            slot,
            Mark::Sent {
                at: now,
                attempt,
                hedge,
            },
        );
    }

    /// An attempt of the request in `slot` was answered or timed out.
    #[cold]
    pub fn answered(&mut self, slot: u32, now: Nanos, attempt: u32, status: Status, timeout: bool) {
        self.mark(
            slot,
            Mark::Answered {
                at: now,
                attempt,
                status: status.name(),
                timeout,
            },
        );
    }

    /// The request in `slot` waits out a backoff until `until`.
    #[cold]
    pub fn backoff(&mut self, slot: u32, now: Nanos, until: Nanos) {
        self.mark(slot, Mark::Backoff { at: now, until });
    }

    /// The request in `slot`, opened at `start`, ended (`why`: given up).
    #[cold]
    pub fn ended(&mut self, slot: u32, now: Nanos, start: Nanos, why: Option<GiveUp>) {
        let id = self.slot_id.get(slot as usize).copied().unwrap_or(NONE);
        match &mut self.mode {
            Mode::Choose {
                n,
                slowest,
                gave_up,
                sample,
            } => {
                if id == NONE || *n == 0 {
                    return;
                }
                let third = n.div_ceil(3);
                // (duration, MAX − id): the larger key wins a tie for the
                // lower id.
                keep_largest(slowest, (now.saturating_sub(start), u64::MAX - id), third);
                // Twice the share, so that those among the slowest leave
                // enough others.
                if why.is_some() && gave_up.len() < 2 * third {
                    gave_up.push(id);
                }
                keep_smallest(sample, (hash(id), id), *n);
            }
            Mode::Record {
                slot_tale, tales, ..
            } => {
                let i = slot_tale.get(slot as usize).copied().unwrap_or(NONE);
                if i != NONE {
                    put(slot_tale, slot, NONE);
                    let outcome = why.map_or("succeeded", gave_up_name);
                    tales[i as usize]
                        .marks
                        .push(Mark::Ended { at: now, outcome });
                }
            }
        }
    }
}

/// Why a request was given up, in words.
fn gave_up_name(w: GiveUp) -> &'static str {
    match w {
        GiveUp::Limits => "gave up: attempts or retry time spent",
        GiveUp::Deadline => "gave up: deadline",
        GiveUp::Budget => "gave up: retry budget refused",
        GiveUp::RetriesDisabled => "gave up: retries switched off",
        GiveUp::Breaker => "failed: breaker open",
        GiveUp::NotRetryable => "failed: not retryable",
    }
}

/// Keeps the `k` largest of `v` after adding `x`.
fn keep_largest<T: Ord + Copy>(v: &mut Vec<T>, x: T, k: usize) {
    if v.len() < k {
        v.push(x);
    } else if let Some((i, &min)) = v.iter().enumerate().min_by_key(|(_, m)| **m) {
        if x > min {
            v[i] = x;
        }
    }
}

/// Keeps the `k` smallest of `v` after adding `x`.
fn keep_smallest<T: Ord + Copy>(v: &mut Vec<T>, x: T, k: usize) {
    if v.len() < k {
        v.push(x);
    } else if let Some((i, &max)) = v.iter().enumerate().max_by_key(|(_, m)| **m) {
        if x < max {
            v[i] = x;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_choice_prefers_slowest_then_given_up_then_the_sample() {
        let mut s = Story::choose(3);
        // Ten requests in slots 0..10; request i lasts i ms, 7 is given up.
        for i in 0..10u32 {
            s.opened(i, 0, i);
        }
        for i in 0..10u32 {
            let why = (i == 7).then_some(GiveUp::Budget);
            s.ended(i, u64::from(i) * 1_000_000, 0, why);
        }
        let chosen = s.chosen();
        assert_eq!(chosen.len(), 3);
        assert_eq!(chosen[0], (9, Pick::Slowest));
        assert_eq!(chosen[1], (7, Pick::GaveUp));
        assert_eq!(chosen[2].1, Pick::Sample);
        // Recording keeps those, in the order opened, with their marks.
        let mut r = Story::record(chosen.clone());
        for i in 0..10u32 {
            r.opened(i, 0, i);
            r.sent(i, 0, 1, false);
            r.answered(i, 5, 1, Status::Ok, false);
            r.ended(i, 5, 0, None);
        }
        let tales = r.into_tales();
        let mut ids: Vec<u64> = chosen.iter().map(|c| c.0).collect();
        ids.sort_unstable();
        assert_eq!(tales.iter().map(|t| t.id).collect::<Vec<_>>(), ids);
        assert!(tales.iter().all(|t| t.marks.len() == 3));
    }

    #[test]
    fn a_tale_cut_short_still_counts_every_attempt_and_keeps_its_end() {
        let mut r = Story::record(vec![(0, Pick::GaveUp)]);
        r.opened(0, 0, 0);
        let n = MAX_MARKS as u32;
        for a in 1..=n {
            r.sent(0, u64::from(a), a, false);
            r.answered(0, u64::from(a), a, Status::Unavailable, false);
        }
        r.ended(0, u64::from(n) + 1, 0, Some(GiveUp::Limits));
        let tale = &r.into_tales()[0];
        assert!(tale.truncated);
        assert_eq!(tale.attempts, n);
        assert_eq!(tale.marks.len(), MAX_MARKS + 1);
        assert!(matches!(tale.marks.last(), Some(Mark::Ended { .. })));
    }
}
