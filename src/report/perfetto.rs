//! `trace.json` of `run --trace N`: the stories of the traced requests in
//! the Chrome trace-event format (JSON object form), which
//! ui.perfetto.dev and the Performance panel of Chromium's DevTools open
//! (`scripts/view-trace.py` loads it there).
//!
//! - one process per policy (`pid` = policy index + 1, named after it);
//! - one thread (track) per traced request, named `request ID (why)`:
//!   a `request` slice from its start to its end (args: client, why it was
//!   chosen, outcome, attempts), inside it one slice per attempt from send
//!   to answer (args: `status`, `tier` — always `top`, the tier the
//!   client calls —, `hedge`, `timeout`), a `backoff` slice for each wait
//!   the policy chose, a `waiting to send` slice where a due attempt
//!   waited for a client-side rate limiter or the dispatcher, and an
//!   instant event with the outcome (`succeeded`, `gave up: retry budget
//!   refused`, …). Hedges go on a second track of the request
//!   (`request ID hedges`) since they overlap the attempt they hedge;
//! - counter tracks per policy, one value per bin of replication 0:
//!   `offered load (attempts/s)`, `queue length` (the bin's mean) and
//!   `goodput (req/s)`.
//!
//! Times are microseconds (`ts`, `dur`) with nanosecond decimals, from
//! the run's start. The size is bounded: about 0.6 KB per request plus
//! about 0.45 KB per attempt (its slice, its backoff and its wait), with
//! at most `model::story::MAX_MARKS` marks kept per request, and about
//! 0.3 KB per bin for the counters.

use super::format::json_str;
use crate::decimal::num;
use crate::metrics::story::{Mark, Tale};
use crate::metrics::BinRow;
use crate::time::Nanos;

/// One policy's part of the trace.
pub struct PolicyTrace<'a> {
    /// The policy's name.
    pub name: &'a str,
    /// Its traced requests.
    pub tales: &'a [Tale],
    /// The bins of its replication 0 (the counters).
    pub bins: &'a [BinRow],
}

/// Nanoseconds as trace microseconds, exactly.
fn us(ns: Nanos) -> String {
    let frac = ns % 1000;
    if frac == 0 {
        (ns / 1000).to_string()
    } else {
        format!("{}.{frac:03}", ns / 1000)
    }
}

/// Adds one event (a JSON object's fields, in order) to `out`.
fn event(out: &mut Vec<String>, fields: &[(&str, String)]) {
    let body: Vec<String> = fields
        .iter()
        .map(|(k, v)| format!("{}: {v}", json_str(k)))
        .collect();
    out.push(format!("{{{}}}", body.join(", ")));
}

/// A complete slice (`ph: X`).
#[allow(clippy::too_many_arguments)]
fn slice(
    out: &mut Vec<String>,
    pid: usize,
    tid: u64,
    name: &str,
    cat: &str,
    from: Nanos,
    to: Nanos,
    args: String,
) {
    event(
        out,
        &[
            ("name", json_str(name)),
            ("cat", json_str(cat)),
            ("ph", json_str("X")),
            ("pid", pid.to_string()),
            ("tid", tid.to_string()),
            ("ts", us(from)),
            ("dur", us(to.saturating_sub(from))),
            ("args", args),
        ],
    );
}

/// One attempt's slice on `track` (pid, tid), from its send to its answer
/// (`span`), with its status, tier, whether it was a hedge and whether it
/// timed out.
fn attempt_slice(
    out: &mut Vec<String>,
    (pid, tid): (usize, u64),
    attempt: u32,
    (from, to): (Nanos, Nanos),
    status: &str,
    hedge: bool,
    timeout: bool,
) {
    slice(
        out,
        pid,
        tid,
        &format!("attempt {attempt}"),
        "attempt",
        from,
        to,
        format!(
            "{{\"status\": {}, \"tier\": \"top\", \"hedge\": {hedge}, \"timeout\": {timeout}}}",
            json_str(status)
        ),
    );
}

fn metadata(out: &mut Vec<String>, what: &str, pid: usize, tid: u64, args: String) {
    event(
        out,
        &[
            ("name", json_str(what)),
            ("ph", json_str("M")),
            ("pid", pid.to_string()),
            ("tid", tid.to_string()),
            ("args", args),
        ],
    );
}

/// The events of one traced request on tracks `tid` (and `tid + 1` for
/// hedges) of process `pid`.
fn request(out: &mut Vec<String>, pid: usize, tid: u64, t: &Tale) {
    let end = request_end(t);
    request_slice(out, (pid, tid), t, end);
    let hedges = mark_events(out, (pid, tid), t, end);
    if hedges {
        metadata(
            out,
            "thread_name",
            pid,
            tid + 1,
            format!(
                "{{\"name\": {}}}",
                json_str(&format!("request {} hedges", t.id))
            ),
        );
    }
}

/// When the request ended: its last `Ended` mark, or its last mark of
/// any kind if it was still open when the run ended.
fn request_end(t: &Tale) -> Nanos {
    t.marks
        .iter()
        .rev()
        .find_map(|m| match *m {
            Mark::Ended { at, .. } => Some(at),
            _ => None,
        })
        .unwrap_or_else(|| t.marks.iter().map(at).max().unwrap_or(t.start))
}

/// The request's track (its name and place) and its `request` slice from
/// its start to `end`, with its client, why it was chosen, its outcome and
/// its attempts.
fn request_slice(out: &mut Vec<String>, (pid, tid): (usize, u64), t: &Tale, end: Nanos) {
    let outcome = t
        .marks
        .iter()
        .find_map(|m| match *m {
            Mark::Ended { outcome, .. } => Some(outcome),
            _ => None,
        })
        .unwrap_or("still open at the end of the run");
    let attempts = t.attempts;
    let label = format!("request {} ({})", t.id, t.pick.name());
    metadata(
        out,
        "thread_name",
        pid,
        tid,
        format!("{{\"name\": {}}}", json_str(&label)),
    );
    metadata(
        out,
        "thread_sort_index",
        pid,
        tid,
        format!("{{\"sort_index\": {tid}}}"),
    );
    slice(
        out,
        pid,
        tid,
        &format!("request {}", t.id),
        "request",
        t.start,
        end,
        format!(
            "{{\"client\": {}, \"chosen\": {}, \"outcome\": {}, \"attempts\": {attempts}, \"truncated\": {}}}",
            t.client,
            json_str(t.pick.name()),
            json_str(outcome),
            t.truncated
        ),
    );
}

/// The events of the request's marks, in order: its attempts, backoffs,
/// waits to send and outcome, the attempts still out at `end` ending
/// with it. Whether any attempt was a hedge (then the hedges' track needs
/// a name).
fn mark_events(out: &mut Vec<String>, (pid, tid): (usize, u64), t: &Tale, end: Nanos) -> bool {
    // (attempt, sent at, hedge) of the attempts out.
    let mut out_now: Vec<(u32, Nanos, bool)> = Vec::new();
    let mut due = Some(t.start);
    let mut hedges = false;
    for m in &t.marks {
        match *m {
            Mark::Sent { at, attempt, hedge } => {
                if let Some(d) = due.take() {
                    if at > d && !hedge {
                        slice(
                            out,
                            pid,
                            tid,
                            "waiting to send",
                            "wait",
                            d,
                            at,
                            "{\"why\": \"rate limiter or dispatcher\"}".into(),
                        );
                    }
                }
                hedges |= hedge;
                out_now.push((attempt, at, hedge));
            }
            Mark::Answered {
                at,
                attempt,
                status,
                timeout,
            } => {
                if let Some(i) = out_now.iter().position(|o| o.0 == attempt) {
                    let (_, sent, hedge) = out_now.remove(i);
                    let status = if timeout { "timed out" } else { status };
                    let track = (pid, tid + u64::from(hedge));
                    attempt_slice(out, track, attempt, (sent, at), status, hedge, timeout);
                }
            }
            Mark::Backoff { at, until } => {
                slice(
                    out,
                    pid,
                    tid,
                    "backoff",
                    "wait",
                    at,
                    until.min(end),
                    "{\"why\": \"the policy's backoff\"}".into(),
                );
                due = Some(until);
            }
            Mark::Ended { at, outcome } => outcome_instant(out, (pid, tid), at, outcome),
        }
    }
    // Attempts never answered (the request ended first) end with it.
    for (attempt, sent, hedge) in out_now {
        let track = (pid, tid + u64::from(hedge));
        attempt_slice(out, track, attempt, (sent, end), "unanswered", hedge, false);
    }
    hedges
}

/// The instant event of the request's `outcome`, at `at`.
fn outcome_instant(out: &mut Vec<String>, (pid, tid): (usize, u64), at: Nanos, outcome: &str) {
    event(
        out,
        &[
            ("name", json_str(outcome)),
            ("cat", json_str("outcome")),
            ("ph", json_str("i")),
            ("s", json_str("t")),
            ("pid", pid.to_string()),
            ("tid", tid.to_string()),
            ("ts", us(at)),
        ],
    );
}

fn at(m: &Mark) -> Nanos {
    match *m {
        Mark::Sent { at, .. }
        | Mark::Answered { at, .. }
        | Mark::Backoff { at, .. }
        | Mark::Ended { at, .. } => at,
    }
}

/// The text of `trace.json`.
pub fn trace(policies: &[PolicyTrace<'_>]) -> String {
    let mut ev: Vec<String> = Vec::new();
    for (i, p) in policies.iter().enumerate() {
        let pid = i + 1;
        metadata(
            &mut ev,
            "process_name",
            pid,
            0,
            format!("{{\"name\": {}}}", json_str(&format!("policy {}", p.name))),
        );
        metadata(
            &mut ev,
            "process_sort_index",
            pid,
            0,
            format!("{{\"sort_index\": {pid}}}"),
        );
        for (k, t) in p.tales.iter().enumerate() {
            request(&mut ev, pid, 2 * k as u64 + 1, t);
        }
        for b in p.bins {
            let ts = us((b.t_s * 1e9).round() as Nanos);
            for (name, v) in [
                ("offered load (attempts/s)", b.offered_rps),
                ("queue length", b.queue_len_avg),
                ("goodput (req/s)", b.goodput_rps),
            ] {
                event(
                    &mut ev,
                    &[
                        ("name", json_str(name)),
                        ("ph", json_str("C")),
                        ("pid", pid.to_string()),
                        ("tid", "0".into()),
                        ("ts", ts.clone()),
                        ("args", format!("{{\"value\": {}}}", num(v))),
                    ],
                );
            }
        }
    }
    format!(
        "{{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n{}\n]}}\n",
        ev.join(",\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::story::Pick;

    #[test]
    fn microseconds_are_exact() {
        assert_eq!(us(0), "0");
        assert_eq!(us(1_500), "1.500");
        assert_eq!(us(2_000_000_007), "2000000.007");
    }

    #[test]
    fn a_request_is_a_track_of_slices_that_end_after_they_start() {
        let tale = Tale {
            id: 7,
            pick: Pick::GaveUp,
            client: 3,
            start: 1_000,
            marks: vec![
                Mark::Sent {
                    at: 1_000,
                    attempt: 1,
                    hedge: false,
                },
                Mark::Answered {
                    at: 5_000,
                    attempt: 1,
                    status: "unavailable",
                    timeout: false,
                },
                Mark::Backoff {
                    at: 5_000,
                    until: 9_000,
                },
                Mark::Sent {
                    at: 12_000,
                    attempt: 2,
                    hedge: false,
                },
                Mark::Ended {
                    at: 20_000,
                    outcome: "gave up: deadline",
                },
            ],
            truncated: false,
            attempts: 2,
        };
        let text = trace(&[PolicyTrace {
            name: "p",
            tales: std::slice::from_ref(&tale),
            bins: &[],
        }]);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let events = v["traceEvents"].as_array().unwrap();
        let names: Vec<&str> = events
            .iter()
            .filter(|e| e["ph"] == "X")
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        let request = events.iter().find(|e| e["name"] == "request 7").unwrap();
        assert_eq!(request["args"]["attempts"], 2);
        assert_eq!(
            names,
            [
                "request 7",
                "attempt 1",
                "backoff",
                "waiting to send",
                "attempt 2"
            ]
        );
        let wait = events
            .iter()
            .find(|e| e["name"] == "waiting to send")
            .unwrap();
        assert_eq!(
            (wait["ts"].as_f64(), wait["dur"].as_f64()),
            (Some(9.0), Some(3.0))
        );
        let last = events.iter().find(|e| e["name"] == "attempt 2").unwrap();
        assert_eq!(last["args"]["status"], "unanswered");
        assert_eq!(
            last["ts"].as_f64().unwrap() + last["dur"].as_f64().unwrap(),
            20.0
        );
    }
}
