//! How fast can this storm go? `benches/peer/storm.json` run by retrysim
//! and by `floor`: the same model written as one single-purpose loop, with
//! nothing retrysim does beyond what the storm needs (no policies to
//! choose from, no faults, no time series, no per-attempt records, no
//! percentiles). Both are timed in one criterion run, so their ratio is
//! what retrysim's generality costs on this storm, and, with the SimPy
//! twin's ratio (`benches/peer/compare.py`), how far a general simulator
//! can get from SimPy here.
//!
//! The floor draws its random durations the way retrysim does (a 64-bit
//! PCG stream, inverse transform through `ln`, rounded to nanoseconds by
//! `time::round_ns`), so the two differ in their engines, not in their
//! arithmetic. It uses its own random stream, so the
//! two agree up to seed noise; the bench checks that they do before it
//! times anything.
//!
//! ```sh
//! cargo bench --bench floor             # both, timed by criterion
//! cargo bench --bench floor -- --once   # the floor once, figures as JSON
//! python3 benches/peer/compare.py --floor   # retrysim, SimPy and the floor
//! ```

use criterion::{criterion_group, Criterion, Throughput};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use retrysim::model::run::simulate;
use retrysim::scenario::Scenario;
use retrysim::time::{parse_duration, round_ns, Nanos};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::{Duration, Instant};

const PEER_STORM: &str = include_str!("peer/storm.json");

/// The storm's parameters, read from the scenario file.
#[derive(Clone, Copy, Debug)]
struct Params {
    rate: f64,
    workers: u32,
    queue_limit: usize,
    service_mean_s: f64,
    timeout: Nanos,
    retry_delay: Nanos,
    max_attempts: u32,
    duration: Nanos,
    warmup: Nanos,
    seed: u64,
}

impl Params {
    fn from_scenario(json: &str) -> Params {
        let v: serde_json::Value = serde_json::from_str(json).expect("storm.json is JSON");
        let dur = |v: &serde_json::Value| {
            parse_duration(v.as_str().expect("a duration"))
                .unwrap()
                .ns()
        };
        let t = &v["traffic"];
        let b = &v["backend"];
        let p = &v["policies"][0];
        Params {
            rate: t["rate"].as_f64().unwrap(),
            workers: b["workers"].as_u64().unwrap() as u32,
            queue_limit: b["queue_limit"].as_u64().unwrap() as usize,
            service_mean_s: dur(&b["service_time"]["exponential"]["mean"]) as f64 * 1e-9,
            timeout: dur(&t["attempt_timeout"]),
            retry_delay: dur(&p["backoff"]["constant"]["delay"]),
            max_attempts: p["max_attempts"].as_u64().unwrap() as u32,
            duration: dur(&v["duration"]),
            warmup: dur(&v["warmup"]),
            seed: v["seed"].as_u64().unwrap(),
        }
    }
}

/// What the floor counts, as retrysim's summary does: requests arriving
/// at or after the warm-up, and work completed at or after it.
#[derive(Debug, Default)]
struct Tally {
    requests: u64,
    succeeded: u64,
    attempts: u64,
    served: u64,
    wasted: u64,
    events: u64,
}

impl Tally {
    fn success_share(&self) -> f64 {
        self.succeeded as f64 / self.requests as f64
    }
    fn attempts_per_request(&self) -> f64 {
        self.attempts as f64 / self.requests as f64
    }
    fn wasted_fraction(&self) -> f64 {
        self.wasted as f64 / self.served as f64
    }
}

/// One request: its attempts so far, and whether its client waits for the
/// latest one. A slot is reused once its request ends; its attempts are
/// numbered on from the last request's, so that a job or timer of an
/// ended request never matches the one now in the slot.
#[derive(Clone, Copy, Default)]
struct Req {
    attempts: u32,
    /// Attempts the request had when it arrived (the slot's earlier ones).
    first: u32,
    waiting: bool,
    counted: bool,
}

/// The storm as one loop: Poisson arrivals, `workers` exponential servers
/// behind a FIFO waiting room of `queue_limit` (full: rejected at once),
/// an attempt timeout that does not cancel the work, a fixed retry delay,
/// at most `max_attempts` attempts; no network delay.
fn floor(p: &Params) -> Tally {
    let mut rng = Pcg64Mcg::seed_from_u64(p.seed);
    let mut exp_ns = move |mean_s: f64| -> Nanos {
        let u: f64 = rng.random();
        round_ns(-(1.0 - u).ln() * mean_s * 1e9)
    };
    let mut reqs: Vec<Req> = Vec::new();
    let mut free: Vec<u32> = Vec::new();
    // (slot, attempt) pairs: the job in service or waiting.
    let mut done: BinaryHeap<Reverse<(Nanos, u32, u32)>> = BinaryHeap::new();
    let mut room: VecDeque<(u32, u32)> = VecDeque::new();
    let mut timeouts: VecDeque<(Nanos, u32, u32)> = VecDeque::new();
    let mut retries: VecDeque<(Nanos, u32)> = VecDeque::new();
    let mut busy = 0u32;
    let mut next_arrival = exp_ns(1.0 / p.rate);
    let mut t = Tally::default();

    // Sends the next attempt of `slot` at `now`; false when rejected.
    macro_rules! send {
        ($slot:expr, $now:expr) => {{
            let slot: u32 = $slot;
            let now: Nanos = $now;
            let r = &mut reqs[slot as usize];
            r.attempts += 1;
            if r.counted {
                t.attempts += 1;
            }
            let attempt = r.attempts;
            let taken = if busy < p.workers {
                busy += 1;
                done.push(Reverse((now + exp_ns(p.service_mean_s), slot, attempt)));
                true
            } else if room.len() < p.queue_limit {
                room.push_back((slot, attempt));
                true
            } else {
                false
            };
            if taken {
                r.waiting = true;
                timeouts.push_back((now + p.timeout, slot, attempt));
            }
            taken
        }};
    }
    // The latest attempt of `slot` failed at `now`: retry later or drop.
    macro_rules! failed {
        ($slot:expr, $now:expr) => {{
            let slot: u32 = $slot;
            let r = &mut reqs[slot as usize];
            r.waiting = false;
            if r.attempts - r.first >= p.max_attempts {
                free.push(slot);
            } else {
                retries.push_back(($now + p.retry_delay, slot));
            }
        }};
    }

    loop {
        let t_done = done.peek().map_or(Nanos::MAX, |Reverse((at, _, _))| *at);
        let t_timeout = timeouts.front().map_or(Nanos::MAX, |e| e.0);
        let t_retry = retries.front().map_or(Nanos::MAX, |e| e.0);
        let now = next_arrival.min(t_done).min(t_timeout).min(t_retry);
        if now >= p.duration {
            break;
        }
        t.events += 1;
        if now == t_done {
            let Reverse((_, slot, attempt)) = done.pop().unwrap();
            let r = &mut reqs[slot as usize];
            let live = r.waiting && r.attempts == attempt;
            if now >= p.warmup {
                t.served += 1;
                t.wasted += u64::from(!live);
            }
            if live {
                r.waiting = false;
                if r.counted {
                    t.succeeded += 1;
                }
                free.push(slot);
            }
            match room.pop_front() {
                Some((s, a)) => done.push(Reverse((now + exp_ns(p.service_mean_s), s, a))),
                None => busy -= 1,
            }
        } else if now == t_timeout {
            let (_, slot, attempt) = timeouts.pop_front().unwrap();
            let r = &reqs[slot as usize];
            if r.waiting && r.attempts == attempt {
                failed!(slot, now);
            }
        } else if now == t_retry {
            let (_, slot) = retries.pop_front().unwrap();
            if !send!(slot, now) {
                failed!(slot, now);
            }
        } else {
            next_arrival = now + exp_ns(1.0 / p.rate);
            let counted = now >= p.warmup;
            t.requests += u64::from(counted);
            let slot = free.pop().unwrap_or_else(|| {
                reqs.push(Req::default());
                (reqs.len() - 1) as u32
            });
            let r = &mut reqs[slot as usize];
            *r = Req {
                first: r.attempts,
                counted,
                ..*r
            };
            if !send!(slot, now) {
                failed!(slot, now);
            }
        }
    }
    t
}

/// Median of a few figures.
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn bench(c: &mut Criterion) {
    let p = Params::from_scenario(PEER_STORM);
    let mut scenario = Scenario::from_json(PEER_STORM).expect("storm.json is valid");
    // The two must simulate the same storm before their speeds compare:
    // over five seeds each, their median success share and attempts per
    // request agree within about two of retrysim's standard deviations
    // across seeds (0.014 and 0.042 on this storm).
    let (mut shares, mut amps) = ((vec![], vec![]), (vec![], vec![]));
    // Requests of the scenario's own seed, the one timed below.
    let mut requests = None;
    for seed in p.seed..p.seed + 5 {
        scenario.set_seed(seed);
        let r = simulate(&scenario, 0, 0)
            .expect("storm.json runs")
            .into_summary();
        requests.get_or_insert(r.requests);
        let f = floor(&Params { seed, ..p });
        let (share, amp) = (
            r.succeeded as f64 / r.requests as f64,
            r.attempts as f64 / r.requests as f64,
        );
        eprintln!(
            "seed {seed}: retrysim success share {share:.4}, {amp:.3} attempts per request, \
             wasted {:.4}; floor {:.4}, {:.3}, wasted {:.4} ({} events)",
            r.wasted as f64 / r.served as f64,
            f.success_share(),
            f.attempts_per_request(),
            f.wasted_fraction(),
            f.events
        );
        shares.0.push(share);
        shares.1.push(f.success_share());
        amps.0.push(amp);
        amps.1.push(f.attempts_per_request());
    }
    let d_share = median(shares.0) - median(shares.1);
    let d_amp = median(amps.0) - median(amps.1);
    assert!(
        d_share.abs() < 0.03,
        "success shares differ by {d_share:.4}: the floor models another storm"
    );
    assert!(
        d_amp.abs() < 0.1,
        "attempts per request differ by {d_amp:.3}: the floor models another storm"
    );
    scenario.set_seed(p.seed);

    let mut group = c.benchmark_group("peer_storm");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(8));
    group.warm_up_time(Duration::from_secs(1));
    group.throughput(Throughput::Elements(requests.unwrap_or(0)));
    group.bench_function("retrysim", |b| {
        b.iter(|| simulate(&scenario, 0, 0).unwrap())
    });
    group.bench_function("floor", |b| b.iter(|| floor(&p)));
    group.finish();
}

criterion_group!(benches, bench);

/// `cargo bench --bench floor` times both with criterion. With `--once`
/// (`cargo bench --bench floor -- --once [--seed N]`, or the built bench
/// binary run directly) it runs the floor once, on the scenario's seed or
/// `N`, and prints its figures as JSON, so that `benches/peer/compare.py
/// --floor` can time it as a whole process beside the SimPy twin.
fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--once") {
        let mut p = Params::from_scenario(PEER_STORM);
        if let Some(i) = args.iter().position(|a| a == "--seed") {
            p.seed = args
                .get(i + 1)
                .and_then(|v| v.parse().ok())
                .expect("--seed takes a whole number");
        }
        let t0 = Instant::now();
        let f = floor(&p);
        let wall = t0.elapsed().as_secs_f64();
        println!(
            "{{\"seed\": {}, \"requests\": {}, \"success_share\": {:.6}, \
             \"attempts_per_request\": {:.6}, \"wasted_fraction\": {:.6}, \
             \"events\": {}, \"wall_s\": {wall:.6}}}",
            p.seed,
            f.requests,
            f.success_share(),
            f.attempts_per_request(),
            f.wasted_fraction(),
            f.events
        );
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
