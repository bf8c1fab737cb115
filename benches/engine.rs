//! End-to-end benchmarks: whole runs of storm scenarios, reported as
//! requests simulated per second (criterion's "elements/s").
//!
//! - `peer_model`: a small M/M/c retry model (c = 100, exp. 10 ms service,
//!   Poisson 7 000 req/s, waiting room 1 000, 1 s timeout, fixed 100 ms
//!   backoff, ≤ 5 attempts, timed-out work served), 60 simulated seconds,
//!   simple enough to re-implement in another simulator for comparison.
//! - `outage_storm`: the same backend through a 20 s outage with a no-jitter
//!   policy bounded by a 30 s deadline: the retry storm the tool is for.
//! - `million_pending`: a million clients fire at once into a 5 s blackhole
//!   with full-jitter exponential backoff, so about a million timers with
//!   random delays are pending at the peak (the heap path under load).
//! - `peer_storm`: `benches/peer/storm.json`, the overload storm that the
//!   SimPy twin (`benches/peer/storm_simpy.py`) also simulates.
//!
//! The first three are the files in `benches/scenarios/`, so that
//! `scripts/count-instructions.sh` and a plain `retrysim run` see the same
//! runs.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use retrysim::model::run::simulate;
use retrysim::scenario::Scenario;
use std::time::Duration;

const PEER: &str = include_str!("scenarios/peer_model.json");
const STORM: &str = include_str!("scenarios/outage_storm.json");
const MILLION: &str = include_str!("scenarios/million_pending.json");
const PEER_STORM: &str = include_str!("peer/storm.json");

fn bench(c: &mut Criterion, name: &str, json: &str, samples: usize) {
    let scenario = Scenario::from_json(json).expect("bench scenario is valid");
    let requests = simulate(&scenario, 0, 0).unwrap().summary().requests;
    let mut group = c.benchmark_group("end_to_end");
    group.sample_size(samples);
    group.measurement_time(Duration::from_secs(8));
    group.warm_up_time(Duration::from_secs(1));
    group.throughput(Throughput::Elements(requests));
    group.bench_function(name, |b| b.iter(|| simulate(&scenario, 0, 0).unwrap()));
    group.finish();
}

fn end_to_end(c: &mut Criterion) {
    bench(c, "peer_model", PEER, 10);
    bench(c, "outage_storm", STORM, 10);
    bench(c, "million_pending", MILLION, 10);
    bench(c, "peer_storm", PEER_STORM, 10);
}

criterion_group!(benches, end_to_end);
criterion_main!(benches);
