//! Event queue, hold model: pop one event, push one, at a fixed number of
//! pending events. Compares the queue's radix-heap path (random delays), its
//! lane path (one fixed delay) and `std::collections::BinaryHeap` on
//! `(time, seq)` as a reference. Events are 16 bytes, like the model's.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use retrysim::engine::EventQueue;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hint::black_box;
use std::time::Duration;

/// A 16-byte event, like the model's.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Ev {
    id: u64,
    attempt: u32,
    kind: u32,
}

fn ev(id: u64) -> Ev {
    Ev {
        id,
        attempt: 1,
        kind: 2,
    }
}

/// xorshift64: cheap enough not to dominate the measurement.
struct Rng(u64);
impl Rng {
    #[inline]
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// A delay uniform in [0, 1 ms) in ns (mean 0.5 ms).
    #[inline]
    fn delay(&mut self) -> u64 {
        self.next() % 1_000_000
    }
}

const SIZES: [usize; 3] = [1_000, 100_000, 1_000_000];
const LANE_DELAY: u64 = 100_000_000;

fn hold(c: &mut Criterion) {
    let mut g = c.benchmark_group("hold");
    g.throughput(Throughput::Elements(1))
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));

    for &n in &SIZES {
        g.bench_with_input(BenchmarkId::new("binary_heap", n), &n, |b, &n| {
            let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
            let mut h = BinaryHeap::with_capacity(n + 1);
            let mut seq = 0u64;
            for _ in 0..n {
                seq += 1;
                h.push(Reverse((rng.delay(), seq, ev(seq))));
            }
            b.iter(|| {
                let Reverse((t, _, e)) = h.pop().unwrap();
                black_box(e);
                seq += 1;
                h.push(Reverse((t + rng.delay(), seq, ev(seq))));
            });
        });

        g.bench_with_input(BenchmarkId::new("radix_heap", n), &n, |b, &n| {
            let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
            let mut q = EventQueue::new();
            for i in 0..n as u64 {
                q.schedule_at(rng.delay(), ev(i));
            }
            let mut i = n as u64;
            b.iter(|| {
                let (_, e) = q.pop().unwrap();
                black_box(e);
                i += 1;
                q.schedule_after(rng.delay(), ev(i));
            });
        });

        g.bench_with_input(BenchmarkId::new("lane", n), &n, |b, &n| {
            let mut q = EventQueue::new();
            let lane = q.register_lane(LANE_DELAY);
            // Spread the initial events over one lane delay: pop evenly
            // spaced heap events, each replaced by a lane event.
            for i in 0..n as u64 {
                q.schedule_at(i * (LANE_DELAY / n as u64), ev(i));
            }
            for i in 0..n as u64 {
                q.pop();
                q.schedule_in_lane(lane, ev(i));
            }
            let mut i = n as u64;
            b.iter(|| {
                let (_, e) = q.pop().unwrap();
                black_box(e);
                i += 1;
                q.schedule_in_lane(lane, ev(i));
            });
        });
    }
    g.finish();
}

criterion_group!(benches, hold);
criterion_main!(benches);
