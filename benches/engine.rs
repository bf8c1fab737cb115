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

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use retrysim::model::run::simulate;
use retrysim::scenario::Scenario;
use std::time::Duration;

const PEER: &str = r#"{
  "name": "peer-model", "duration": "60s", "seed": 1,
  "traffic": {"rate": 7000, "clients": 1000, "attempt_timeout": "1s"},
  "backend": {"workers": 100, "service_time": {"exponential": {"mean": "10ms"}}, "queue_limit": 1000},
  "policies": [{"name": "fixed-100ms", "max_attempts": 5, "backoff": {"constant": {"delay": "100ms"}}}]
}"#;

const STORM: &str = r#"{
  "name": "outage-storm", "duration": "60s", "seed": 1,
  "traffic": {"rate": 7000, "clients": 5000, "attempt_timeout": "1s", "deadline": "30s"},
  "backend": {"workers": 100, "service_time": {"exponential": {"mean": "10ms"}}, "queue_limit": 2000,
              "admission_cost": "200us", "reject_cost": "50us"},
  "faults": [{"outage": {"start": "10s", "duration": "20s"}}],
  "policies": [{"name": "no-jitter", "max_attempts": 0, "backoff": {"constant": {"delay": "100ms"}}}]
}"#;

const MILLION: &str = r#"{
  "name": "million-pending", "duration": "30s", "seed": 1,
  "traffic": {"mode": "burst", "clients": 1000000, "burst_at": "0s", "burst_spread": "1s",
              "attempt_timeout": "2s"},
  "backend": {"workers": 200, "service_time": {"exponential": {"mean": "2ms"}}},
  "faults": [{"blackhole": {"start": "0s", "duration": "5s"}}],
  "policies": [{"name": "full-jitter", "max_attempts": 10, "jitter": "full",
                "backoff": {"exponential": {"initial": "1s", "multiplier": 2, "max": "8s"}}}]
}"#;

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
