//! The `finagle` and `linkerd` presets against small ports of the
//! libraries' own budget code, on the case those presets exist for: a 30 s
//! outage at 100 req/s after 20 s of health, every failure retried at once
//! for as long as the budget allows.
//!
//! The ports are written here from the libraries' source (read at the
//! versions `docs/policies.md` cites), in this file's own words:
//!
//! - Finagle: `RetryBudget.apply` (deposit 1000, withdrawal 1000 / 0.2,
//!   reserve `10/s × 10 s × withdrawal`), util's `TokenBucket.newLeakyBucket`
//!   over a `WindowedAdder` of 10 slices (a writer and 9 buffers; a slice
//!   rotates at the first touch a window after the last rotation), and
//!   `RequeueFilter` (a request may retry `ceil(0.2 × balance)` times, the
//!   balance read when it starts; it deposits once, when its final answer
//!   is a success).
//! - Linkerd: tower 0.5's `TpsBudget` (deposit 1, withdrawal 5, reserve
//!   500; 10 slots and a writer, rotated at the first touch a window after
//!   the last rotation, skipping one more slot for every full window beyond
//!   the first) under linkerd2-proxy's ServiceProfile retry policy (an
//!   answer it will not retry deposits; a retryable one withdraws or ends
//!   the request).

use retrysim::metrics::RunResult;
use retrysim::model::run::simulate;
use retrysim::scenario::Scenario;

const MS: u64 = 1_000_000;
const S: u64 = 1_000 * MS;
/// Healthy until 20 s, down from 20 s to 50 s.
const OUTAGE_START: u64 = 20 * S;
const OUTAGE_END: u64 = 50 * S;
/// One request every 10 ms (100 req/s).
const SPACING: u64 = 10 * MS;

/// A tiny deterministic generator for the "real clock" runs' timing noise.
struct Lcg(u64);

impl Lcg {
    /// A draw in [0, n).
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// Finagle's sliding sum: a writer for the current slice and `n` older
/// slices; times in milliseconds.
struct WindowedAdder {
    window: i64,
    writer: i64,
    buf: Vec<i64>,
    i: usize,
    old: i64,
}

impl WindowedAdder {
    fn new(range_ms: i64, slices: usize) -> WindowedAdder {
        WindowedAdder {
            window: range_ms / slices as i64,
            writer: 0,
            buf: vec![0; slices - 1],
            i: 0,
            old: 0,
        }
    }

    fn expire_if_due(&mut self, now: i64) {
        if now - self.old < self.window {
            return;
        }
        let n = self.buf.len();
        self.buf[self.i] = self.writer;
        self.writer = 0;
        self.i = (self.i + 1) % n;
        // Slices wholly skipped since the last rotation are emptied.
        let skip = ((now - self.old) / self.window - 1).min(n as i64);
        for _ in 0..skip.max(0) {
            self.buf[self.i] = 0;
            self.i = (self.i + 1) % n;
        }
        self.old = now;
    }

    fn add(&mut self, now: i64, x: i64) {
        self.expire_if_due(now);
        self.writer += x;
    }

    fn sum(&mut self, now: i64) -> i64 {
        self.expire_if_due(now);
        self.writer + self.buf.iter().sum::<i64>()
    }
}

/// Finagle's default `RetryBudget()` and its requeue filter.
struct Finagle {
    w: WindowedAdder,
    reserve: i64,
}

const FINAGLE_DEPOSIT: i64 = 1000;
const FINAGLE_WITHDRAW: i64 = 5000; // 1000 / 0.2

impl Finagle {
    fn new() -> Finagle {
        Finagle {
            w: WindowedAdder::new(10_000, 10),
            reserve: 10 * 10 * FINAGLE_WITHDRAW,
        }
    }

    fn balance(&mut self, now: i64) -> i64 {
        (self.w.sum(now) + self.reserve) / FINAGLE_WITHDRAW
    }

    fn try_withdraw(&mut self, now: i64) -> bool {
        let ok = self.w.sum(now) + self.reserve >= FINAGLE_WITHDRAW;
        if ok {
            self.w.add(now, -FINAGLE_WITHDRAW);
        }
        ok
    }

    /// One request at `now` (ms); returns the retries it made.
    fn request(&mut self, now: i64, down: bool) -> u64 {
        let mut remaining = (0.2 * self.balance(now) as f64).ceil() as i64;
        if !down {
            self.w.add(now, FINAGLE_DEPOSIT);
            return 0;
        }
        let mut retries = 0;
        while remaining > 0 && self.try_withdraw(now) {
            remaining -= 1;
            retries += 1;
        }
        retries
    }
}

/// tower 0.5's `TpsBudget::new(10 s, 10, 0.2)`; times in nanoseconds.
struct Tower {
    slots: [i64; 10],
    writer: i64,
    index: usize,
    time: u64,
    window: u64,
}

const TOWER_WITHDRAW: i64 = 5; // 1 / 0.2
const TOWER_RESERVE: i64 = 10 * 10 * TOWER_WITHDRAW;

impl Tower {
    fn new() -> Tower {
        Tower {
            slots: [0; 10],
            writer: 0,
            index: 0,
            time: 0,
            window: S,
        }
    }

    fn expire(&mut self, now: u64) {
        let mut diff = now.saturating_sub(self.time);
        if diff < self.window {
            return;
        }
        self.slots[self.index] = self.writer;
        self.writer = 0;
        let mut idx = (self.index + 1) % 10;
        while diff > self.window {
            self.slots[idx] = 0;
            diff -= self.window;
            idx = (idx + 1) % 10;
        }
        self.index = idx;
        self.time = now;
    }

    fn deposit(&mut self, now: u64) {
        self.expire(now);
        self.writer += 1;
    }

    fn withdraw(&mut self, now: u64) -> bool {
        self.expire(now);
        let sum = self.writer + self.slots.iter().sum::<i64>() + TOWER_RESERVE;
        let ok = sum >= TOWER_WITHDRAW;
        if ok {
            self.writer -= TOWER_WITHDRAW;
        }
        ok
    }

    /// One request at `now` through Linkerd's retry policy; `noise` adds
    /// a real clock's few microseconds to every step. Returns its retries.
    fn request(&mut self, mut now: u64, down: bool, noise: &mut Option<Lcg>) -> u64 {
        let mut step = |now: &mut u64| {
            if let Some(g) = noise.as_mut() {
                *now += 1 + g.below(50_000);
            }
        };
        step(&mut now);
        if !down {
            self.deposit(now);
            return 0;
        }
        let mut retries = 0;
        while self.withdraw(now) {
            retries += 1;
            step(&mut now);
        }
        retries
    }
}

/// Retries sent during the outage by the Finagle port.
fn finagle_port() -> u64 {
    let mut f = Finagle::new();
    let mut retries = 0;
    let mut t = 0;
    while t < OUTAGE_END {
        let down = t >= OUTAGE_START;
        retries += f.request((t / MS) as i64, down);
        t += SPACING;
    }
    retries
}

/// Retries sent during the outage by the tower / Linkerd port, on an exact
/// clock or on one with microseconds of noise.
fn linkerd_port(real_clock: bool) -> u64 {
    let mut b = Tower::new();
    let mut noise = real_clock.then_some(Lcg(7));
    let mut retries = 0;
    let mut t = 0;
    while t < OUTAGE_END {
        retries += b.request(t, t >= OUTAGE_START, &mut noise);
        t += SPACING;
    }
    retries
}

/// The simulator's retries during the outage with a preset.
fn simulated(preset: &str) -> f64 {
    let json = format!(
        r#"{{"name": "budget-outage", "seed": 1, "duration": "60s", "bin": "1s",
            "traffic": {{"rate": 100, "arrival": "uniform"}},
            "backend": {{"workers": 50, "service_time": {{"constant": {{"value": "1ms"}}}}}},
            "faults": [{{"outage": {{"start": "20s", "duration": "30s"}}}}],
            "policies": [{{"name": "{preset}", "preset": "{preset}"}}]}}"#
    );
    let s = Scenario::from_json(&json).unwrap_or_else(|e| panic!("test scenario: {e}\n{json}"));
    let r: RunResult = simulate(&s, 0, 0).expect("runs");
    let outside: f64 = r
        .bins()
        .iter()
        .filter(|b| b.t_s < 20.0 - 1e-9 || b.t_s >= 50.0 - 1e-9)
        .map(|b| b.retry_rps)
        .sum();
    assert_eq!(outside, 0.0, "{preset}: retries only during the outage");
    let n = r.bins().iter().map(|b| b.retry_rps).sum();
    eprintln!("{preset}: {n} retries");
    n
}

#[test]
fn the_finagle_port_lets_about_500_retries_through() {
    // 300 at once (200 from the last 10 s of successes, 100 of reserve,
    // each request taking at most a fifth of what is left), then the
    // reserve again each time the withdrawals expire (30 s, 40 s).
    let n = finagle_port();
    eprintln!("Finagle port: {n} retries");
    assert!((480..=500).contains(&n), "Finagle port: {n}");
}

#[test]
fn the_finagle_preset_matches_its_port() {
    let port = finagle_port() as f64;
    let sim = simulated("finagle");
    assert!(
        (480.0..=500.0).contains(&sim) && (sim - port).abs() <= 10.0,
        "finagle preset {sim} vs port {port}"
    );
}

#[test]
fn the_linkerd_port_gives_500_on_an_exact_clock_and_720_on_a_real_one() {
    // Exact clock: a rotation comes exactly one window after the last, so
    // a deposit lives 11 windows (the writer and 10 slots): about 300 at
    // once, then the reserve's 100 each time the withdrawals expire.
    let exact = linkerd_port(false);
    assert!((500..=530).contains(&exact), "exact clock: {exact}");
    // A real clock comes a little late: every rotation also clears the
    // next slot and skips it, so only every other slot holds anything and
    // a deposit lives about 6 windows: 120 + 100 at once, then the reserve
    // about every 6 s.
    let real = linkerd_port(true);
    eprintln!("Linkerd port: {exact} retries (exact clock), {real} (real clock)");
    assert!((690..=740).contains(&real), "real clock: {real}");
}

#[test]
fn the_linkerd_preset_lies_between_its_ports() {
    let exact = linkerd_port(false) as f64;
    let real = linkerd_port(true) as f64;
    // The model's aligned window (9 to 10 slots) lets a little less
    // through than tower's 11 windows on an exact clock.
    let sim = simulated("linkerd");
    assert!(
        sim >= exact - 30.0 && sim <= real,
        "linkerd preset {sim} vs ports {exact} (exact clock) .. {real} (real clock)"
    );
}

#[test]
fn depositing_per_request_lets_nearly_twice_as_many_through() {
    // The `request` rule (every new request deposits) keeps earning
    // credit during the outage: any 10 s holds 1,000 deposits (200
    // retries) plus the reserve's 100, so each of the outage's three
    // windows lets about 300 through: about 900, where the libraries'
    // rules give about 500.
    let json = r#"{"name": "budget-outage", "seed": 1, "duration": "60s", "bin": "1s",
        "traffic": {"rate": 100, "arrival": "uniform"},
        "backend": {"workers": 50, "service_time": {"constant": {"value": "1ms"}}},
        "faults": [{"outage": {"start": "20s", "duration": "30s"}}],
        "policies": [{"name": "per-request", "preset": "finagle",
                      "budget": {"ratio": {"percent": 20, "min_per_second": 10}}}]}"#;
    let s = Scenario::from_json(json).expect("parses");
    let r = simulate(&s, 0, 0).expect("runs");
    let n: f64 = r.bins().iter().map(|b| b.retry_rps).sum();
    assert!((870.0..=910.0).contains(&n), "per-request deposits: {n}");
    assert!(n > 1.75 * simulated("finagle"));
}
