#!/usr/bin/env python3
"""SimPy 4 twin of retrysim's retry-storm model (benches/peer/storm.json).

Model (the same as retrysim's queue backend with these settings):

- new requests arrive as a Poisson process at rate `rate`;
- the backend has `workers` identical workers (a SimPy `Resource`) and a
  FIFO waiting room of `queue_limit`; an attempt that finds every worker
  busy and the waiting room full is rejected at once (`unavailable`,
  answered immediately, no worker time spent);
- service times are exponential (or constant) with mean `service`;
- the client gives up waiting for an attempt `attempt_timeout` after
  sending it; the backend does not cancel it: the attempt keeps its place
  and is served later, for nobody (wasted work);
- after a failure (timeout or rejection) the client waits `retry_delay`
  and sends the next attempt, up to `max_attempts` attempts in all, after
  which the request is dropped;
- no network delay: an attempt reaches the backend when it is sent and an
  answer reaches the client when it is given.

Counting follows retrysim's summary: only requests arriving at or after
`warmup` count (`requests`, `succeeded`, `attempts`, latency); `attempts`
includes those of requests still open at the end; `served` and `wasted`
count service completions at or after `warmup`; nothing at or after
`duration` happens.

It is written the idiomatic SimPy way, one process per request and one per
attempt taken by the backend, so its speed is what a SimPy user would get.

Parameters come from a retrysim scenario file (only the subset above is
accepted; anything else is an error) and may be overridden by flags.
Prints one JSON object on stdout.
"""

import argparse
import json
import random
import re
import sys
import time

try:
    import simpy
except ImportError:  # pragma: no cover - depends on the machine
    sys.exit("storm_simpy.py needs SimPy 4: pip install simpy==4.1.1")

UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def seconds(value):
    """A retrysim duration ("110ms", "40s", or a number of seconds) in seconds."""
    if isinstance(value, (int, float)):
        return float(value)
    m = re.fullmatch(r"\s*([0-9.]+)\s*([a-z]*)\s*", value)
    if not m or (m.group(2) or "s") not in UNITS:
        raise ValueError(f"not a duration: {value!r}")
    return float(m.group(1)) * UNITS[m.group(2) or "s"]


def from_scenario(path):
    """The model's parameters from a retrysim scenario, refusing what the twin lacks."""
    with open(path) as f:
        s = json.load(f)

    def only(obj, allowed, where):
        extra = set(obj) - set(allowed)
        if extra:
            raise SystemExit(f"{path}: {where}: the SimPy twin does not model {sorted(extra)}")

    only(s, {"name", "description", "seed", "duration", "warmup", "bin", "traffic",
             "backend", "policies", "report"}, "top level")
    t, b = s["traffic"], s.get("backend", {})
    only(t, {"rate", "clients", "arrival", "mode", "attempt_timeout"}, "traffic")
    if t.get("arrival", "poisson") != "poisson" or t.get("mode", "open") != "open":
        raise SystemExit(f"{path}: the twin models open Poisson arrivals only")
    only(b, {"kind", "workers", "service_time", "queue_limit", "discipline",
             "drop_expired", "reject_status"}, "backend")
    if (b.get("kind", "queue") != "queue" or b.get("discipline", "fifo") != "fifo"
            or b.get("drop_expired", False)):
        raise SystemExit(f"{path}: the twin models a FIFO queue backend that serves expired attempts")
    (dist, dp), = b["service_time"].items()
    if dist == "exponential":
        service = seconds(dp["mean"])
    elif dist == "constant":
        service = seconds(dp["value"])
    else:
        raise SystemExit(f"{path}: service_time {dist}: the twin has exponential or constant only")
    if len(s["policies"]) != 1:
        raise SystemExit(f"{path}: the twin models one policy")
    p = s["policies"][0]
    only(p, {"name", "max_attempts", "backoff", "jitter"}, "policy")
    if p.get("jitter", "none") != "none" or list(p["backoff"]) != ["constant"]:
        raise SystemExit(f"{path}: the twin models a constant backoff without jitter")
    if p.get("max_attempts", 1) < 1:
        raise SystemExit(f"{path}: the twin needs a finite max_attempts")
    return {
        "rate": float(t["rate"]),
        "workers": int(b["workers"]),
        "queue_limit": int(b["queue_limit"]),
        "service": service,
        "service_dist": dist,
        "attempt_timeout": seconds(t["attempt_timeout"]),
        "retry_delay": seconds(p["backoff"]["constant"]["delay"]),
        "max_attempts": int(p["max_attempts"]),
        "duration": seconds(s["duration"]),
        "warmup": seconds(s.get("warmup", 0)),
        "seed": int(s.get("seed", 1)),
    }


class Stats:
    __slots__ = ("requests", "succeeded", "dropped", "attempts", "rejected",
                 "timeouts", "served", "wasted", "latency_sum")

    def __init__(self):
        for k in self.__slots__:
            setattr(self, k, 0)


class Attempt:
    """One attempt the backend took: `done` fires if it is served while the
    client still waits (`waiting`)."""
    __slots__ = ("done", "waiting")

    def __init__(self, done):
        self.done = done
        self.waiting = True


def simulate(prm):
    rng = random.Random(prm["seed"])
    env = simpy.Environment()
    backend = simpy.Resource(env, capacity=prm["workers"])
    st = Stats()
    rate, workers, limit = prm["rate"], prm["workers"], prm["queue_limit"]
    timeout, delay, max_attempts = prm["attempt_timeout"], prm["retry_delay"], prm["max_attempts"]
    warmup, mean = prm["warmup"], prm["service"]
    expo = rng.expovariate
    if prm["service_dist"] == "exponential":
        def service():
            return expo(1.0 / mean)
    else:
        def service():
            return mean

    def serve(att):
        with backend.request() as req:
            yield req
            yield env.timeout(service())
        if env.now >= warmup:
            st.served += 1
            if not att.waiting:
                st.wasted += 1
        if att.waiting:
            att.done.succeed()

    def request():
        start = env.now
        counted = start >= warmup
        if counted:
            st.requests += 1
        for attempt in range(1, max_attempts + 1):
            if counted:
                st.attempts += 1
            if backend.count >= workers and len(backend.queue) >= limit:
                # Waiting room full: rejected and answered at once.
                if counted:
                    st.rejected += 1
            else:
                att = Attempt(env.event())
                env.process(serve(att))
                yield att.done | env.timeout(timeout)
                if att.done.triggered:
                    if counted:
                        st.succeeded += 1
                        st.latency_sum += env.now - start
                    return
                att.waiting = False
                if counted:
                    st.timeouts += 1
            if attempt == max_attempts:
                if counted:
                    st.dropped += 1
                return
            yield env.timeout(delay)

    def arrivals():
        while True:
            yield env.timeout(expo(rate))
            env.process(request())

    env.process(arrivals())
    t0 = time.perf_counter()
    env.run(until=prm["duration"])
    wall = time.perf_counter() - t0
    # SimPy numbers every scheduled event; those still queued never ran.
    eid = getattr(env, "_eid", None)
    events = next(eid) - len(env._queue) if eid is not None else None
    n = st.requests
    return {
        "engine": f"simpy {simpy.__version__}",
        "seed": prm["seed"],
        "requests": n,
        "succeeded": st.succeeded,
        "dropped": st.dropped,
        "unfinished": n - st.succeeded - st.dropped,
        "attempts": st.attempts,
        "success_share": st.succeeded / n if n else 0.0,
        "attempts_per_request": st.attempts / n if n else 0.0,
        "rejected": st.rejected,
        "timeouts": st.timeouts,
        "served": st.served,
        "wasted": st.wasted,
        "wasted_fraction": st.wasted / st.served if st.served else 0.0,
        "latency_mean_ms": 1e3 * st.latency_sum / st.succeeded if st.succeeded else None,
        "wall_s": wall,
        "events": events,
        "params": prm,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", default=None,
                    help="retrysim scenario to take the parameters from "
                         "(default: storm.json next to this script)")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--duration", type=float, help="simulated seconds")
    ap.add_argument("--warmup", type=float, help="seconds")
    ap.add_argument("--rate", type=float)
    ap.add_argument("--workers", type=int)
    ap.add_argument("--queue-limit", type=int)
    ap.add_argument("--service", type=float, help="mean service time, seconds")
    ap.add_argument("--service-dist", choices=["exponential", "constant"])
    ap.add_argument("--attempt-timeout", type=float, help="seconds")
    ap.add_argument("--retry-delay", type=float, help="seconds")
    ap.add_argument("--max-attempts", type=int)
    a = ap.parse_args()
    if a.scenario is None:
        import os
        a.scenario = os.path.join(os.path.dirname(os.path.abspath(__file__)), "storm.json")
    prm = from_scenario(a.scenario)
    for k in prm:
        v = getattr(a, k, None)
        if v is not None:
            prm[k] = v
    json.dump(simulate(prm), sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
