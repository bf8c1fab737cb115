//! The `contention` backend (optimistic concurrency on one record) on tiny
//! cases whose timing and outcome can be worked out by hand.

use retrysim::model::run::simulate;
use retrysim::scenario::Scenario;

fn scenario(clients: u32, extra: &str) -> Scenario {
    Scenario::from_json(&text(clients, extra)).unwrap()
}

fn text(clients: u32, extra: &str) -> String {
    format!(
        r#"{{"name": "c", "duration": "60s", "bin": "100ms",
            "traffic": {{"clients": {clients}, "mode": "burst",
              "network_delay": {{"constant": {{"value": "10ms"}}}} {extra} }},
            "backend": {{"kind": "contention"}},
            "policies": [{{"name": "retry", "max_attempts": 0,
              "backoff": {{"constant": {{"delay": "0s"}}}},
              "retry_on": ["aborted"]}}]}}"#
    )
}

#[test]
fn one_client_commits_with_one_attempt_after_two_round_trips() {
    let r = simulate(&scenario(1, ""), 0, 0).unwrap();
    let s = &r.summary();
    assert_eq!((s.requests, s.succeeded, s.attempts), (1, 1, 1));
    assert_eq!(s.offered, 1);
    // Read at 10 ms, write at 30 ms, answer at 40 ms.
    assert_eq!(s.last_success_s, Some(0.04));
}

#[test]
fn the_second_writer_aborts_and_commits_on_its_retry() {
    // Both read version 0 at 10 ms; the first write (30 ms) commits,
    // the second aborts (answer at 40 ms), retries at once: read at
    // 50 ms, write at 70 ms, answer at 80 ms.
    let r = simulate(&scenario(2, ""), 0, 0).unwrap();
    let s = &r.summary();
    assert_eq!((s.requests, s.succeeded, s.attempts), (2, 2, 3));
    assert_eq!(s.last_success_s, Some(0.08));
    let errors: f64 = r.bins().iter().map(|b| b.error_rps * 0.1).sum();
    assert!((errors - 1.0).abs() < 1e-9, "one aborted answer: {errors}");
}

#[test]
fn without_aborted_in_retry_on_a_conflict_fails_the_request() {
    let default_retry_on = text(2, "").replace(
        r#""retry_on": ["aborted"]"#,
        r#""retry_on": ["unavailable", "resource_exhausted", "deadline_exceeded"]"#,
    );
    assert!(!default_retry_on.contains("aborted"));
    let r = simulate(&Scenario::from_json(&default_retry_on).unwrap(), 0, 0).unwrap();
    assert_eq!((r.summary().succeeded, r.summary().failed), (1, 1));
}

#[test]
fn a_timed_out_attempt_is_wasted_and_every_request_ends_once() {
    let s = scenario(30, r#", "attempt_timeout": "25ms", "deadline": "2s""#);
    let r = simulate(&s, 0, 0).unwrap();
    let m = &r.summary();
    // Every attempt times out before its answer (40 ms): nothing succeeds.
    assert_eq!(m.succeeded, 0);
    assert_eq!(m.dropped + m.unfinished + m.failed, 30);
    assert_eq!(m.wasted, m.served);
    assert!(m.served > 0);
}

#[test]
fn runs_are_deterministic() {
    let normal = text(40, "").replace(
        r#"{"constant": {"value": "10ms"}}"#,
        r#"{"normal": {"mean": "10ms", "stddev": "2ms"}}"#,
    );
    let s = Scenario::from_json(&normal).unwrap();
    assert_eq!(simulate(&s, 0, 3).unwrap(), simulate(&s, 0, 3).unwrap());
    assert_ne!(
        simulate(&s, 0, 3).unwrap().summary(),
        simulate(&s, 0, 4).unwrap().summary()
    );
}

#[test]
fn fields_for_workers_and_a_waiting_room_are_refused() {
    // The record has no worker to charge an admission or a rejection,
    // and no waiting room to order or to skip expired attempts in.
    let with = |fields: &str| {
        text(2, "").replace(
            r#""backend": {"kind": "contention"}"#,
            &format!(r#""backend": {{"kind": "contention", {fields}}}"#),
        )
    };
    for (fields, path) in [
        (r#""admission_cost": "1ms""#, "backend.admission_cost"),
        (r#""reject_cost": "1ms""#, "backend.reject_cost"),
        (r#""discipline": "lifo""#, "backend.discipline"),
        (r#""drop_expired": true"#, "backend.drop_expired"),
    ] {
        let e = Scenario::from_json(&with(fields))
            .err()
            .unwrap_or_else(|| panic!("{fields} is accepted"))
            .to_string();
        assert!(
            e.contains(&format!(
                "{path}: has no meaning for a \"contention\" backend (it has no workers and \
                 no queue); remove it"
            )),
            "{fields}: {e}"
        );
    }
    // Their defaults, written out, ask for nothing the record lacks.
    let defaults = with(
        r#""admission_cost": "0s", "reject_cost": "0s", "discipline": "fifo",
           "drop_expired": false"#,
    );
    assert!(Scenario::from_json(&defaults).is_ok());
}
