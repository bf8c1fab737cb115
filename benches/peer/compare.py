#!/usr/bin/env python3
"""Runs retrysim and its SimPy twin on benches/peer/storm.json and compares
their speed and their results.

    python3 benches/peer/compare.py                 # 5 retrysim seeds, 1 SimPy seed
    python3 benches/peer/compare.py --seeds 10 --simpy-seeds 3
    python3 benches/peer/compare.py --duration 10 --warmup 2   # quick look
    python3 benches/peer/compare.py --floor         # also the single-purpose floor
    python3 benches/peer/compare.py --floor --rounds 9   # and ratios measured in turn

Installs nothing: it needs SimPy 4 (`pip install simpy==4.1.1`) and cargo.
It builds retrysim in release mode, runs it once per seed (the scenario's
seed, then the next ones) and the SimPy model once per SimPy seed, then
prints:

- wall time: the simulation alone (retrysim's perf.json `wall_s`, the
  SimPy script's timing of `env.run`) and the whole process (start-up,
  parsing and report writing included), medians over the runs, and their
  ratio SimPy / retrysim;
- agreement: success share (succeeded / requests), attempts per request,
  wasted fraction and mean latency of successes, each as retrysim's median
  and seed spread (min-max, standard deviation) against SimPy's values.

The two engines use different random streams, so they agree only up to
seed noise: judge a difference by retrysim's spread across seeds.

With --floor it also builds `benches/floor.rs` (the same storm as one
single-purpose Rust loop, see benches/peer/README.md) and runs it once per
retrysim seed, after retrysim, and prints its times and figures in the
same tables: how far any simulator of this storm could get from SimPy.
--duration and --warmup do not apply to it (it always runs storm.json as
written).

With --rounds N it then runs the engines in turn N times on the scenario's
own seed (SimPy, retrysim, then the floor with --floor) and prints each
ratio's median and [min, max] over the rounds, for the simulation alone
and for each process's CPU time (user + system). This machine's speed
drifts by tens of per cent between series, SimPy's by up to a half, so
only ratios taken within one round compare like with like.
"""

import argparse
import itertools
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCENARIO = os.path.join(HERE, "storm.json")
TWIN = os.path.join(HERE, "storm_simpy.py")


def timed(cmd, **kwargs):
    """Runs `cmd` to completion; returns its result, wall seconds and CPU seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, check=True, **kwargs)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return r, wall, cpu


def check_simpy():
    r = subprocess.run([sys.executable, "-c", "import simpy"], capture_output=True)
    if r.returncode != 0:
        sys.exit("SimPy is not installed for this python3. Install it with:\n"
                 "    pip install simpy==4.1.1\n"
                 "(this script installs nothing itself).")


def build():
    """Builds the release binary and returns its path."""
    if shutil.which("cargo") is None:
        sys.exit("cargo is not on PATH: install Rust (https://rustup.rs) to build retrysim.")
    subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "retrysim"],
                   cwd=ROOT, check=True)
    meta = subprocess.run(["cargo", "metadata", "--format-version", "1", "--no-deps"],
                          cwd=ROOT, check=True, capture_output=True, text=True)
    return os.path.join(json.loads(meta.stdout)["target_directory"], "release", "retrysim")


def build_floor():
    """Builds the floor bench (release profile) and returns its executable."""
    r = subprocess.run(["cargo", "bench", "--bench", "floor", "--no-run", "--quiet",
                        "--message-format=json"],
                       cwd=ROOT, check=True, capture_output=True, text=True)
    for line in r.stdout.splitlines():
        msg = json.loads(line)
        if (msg.get("reason") == "compiler-artifact" and msg.get("executable")
                and msg["target"]["name"] == "floor"):
            return msg["executable"]
    sys.exit("cargo built no floor bench executable")


def run_floor(binary, seed):
    r, wall, cpu = timed([binary, "--once", "--seed", str(seed)],
                         capture_output=True, text=True)
    d = json.loads(r.stdout)
    d["process_s"], d["cpu_s"] = wall, cpu
    return d


def run_retrysim(binary, seed, args, out):
    cmd = [binary, "run", SCENARIO, "-o", out, "--no-plots", "-q", "--seed", str(seed)]
    if args.duration is not None:
        cmd += ["--set", f"duration={args.duration}s"]
    if args.warmup is not None:
        cmd += ["--set", f"warmup={args.warmup}s"]
    _, process_s, cpu_s = timed(cmd)
    d = os.path.join(out, "peer-storm")
    with open(os.path.join(d, "summary.json")) as f:
        s = json.load(f)["policies"][0]
    with open(os.path.join(d, "perf.json")) as f:
        perf = json.load(f)
    return {
        "seed": seed,
        "requests": s["requests"],
        "success_share": s["success_rate"],
        "attempts_per_request": s["amplification"],
        "wasted_fraction": s["wasted_fraction"],
        "latency_mean_ms": s["latency_mean_ms"],
        "events": perf["events"],
        "wall_s": perf["wall_s"],
        "process_s": process_s,
        "cpu_s": cpu_s,
    }


def run_simpy(seed, args):
    cmd = [sys.executable, TWIN, "--scenario", SCENARIO, "--seed", str(seed)]
    if args.duration is not None:
        cmd += ["--duration", str(args.duration)]
    if args.warmup is not None:
        cmd += ["--warmup", str(args.warmup)]
    r, process_s, cpu_s = timed(cmd, capture_output=True, text=True)
    d = json.loads(r.stdout)
    d["process_s"], d["cpu_s"] = process_s, cpu_s
    return d


def spread(values):
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return statistics.median(values), min(values), max(values), sd


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=5, help="retrysim runs (default 5)")
    ap.add_argument("--simpy-seeds", type=int, default=1, help="SimPy runs (default 1)")
    ap.add_argument("--duration", type=float, help="override the simulated seconds (both)")
    ap.add_argument("--warmup", type=float, help="override the warm-up seconds (both)")
    ap.add_argument("--json", help="also write every run's figures to this file")
    ap.add_argument("--floor", action="store_true",
                    help="also time benches/floor.rs, the storm as one single-purpose loop")
    ap.add_argument("--rounds", type=int, default=0,
                    help="then run the engines in turn this many times and print the "
                         "ratios' median [min, max] (default 0: none)")
    args = ap.parse_args()
    if args.seeds < 1 or args.simpy_seeds < 1 or args.rounds < 0:
        sys.exit("--seeds and --simpy-seeds need at least 1, --rounds at least 0")
    if args.floor and (args.duration is not None or args.warmup is not None):
        sys.exit("--floor runs storm.json as written: drop --duration and --warmup")

    check_simpy()
    binary = build()
    floor_bin = build_floor() if args.floor else None
    with open(SCENARIO) as f:
        seed0 = json.load(f).get("seed", 1)

    out = tempfile.mkdtemp(prefix="retrysim-peer-")
    try:
        rs = []
        for i in range(args.seeds):
            rs.append(run_retrysim(binary, seed0 + i, args, out))
            r = rs[-1]
            print(f"retrysim seed {r['seed']}: {r['wall_s']:.3f} s simulation, "
                  f"{r['process_s']:.3f} s process, {r['events']} events", file=sys.stderr)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    fs = []
    if floor_bin:
        for i in range(args.seeds):
            fs.append(run_floor(floor_bin, seed0 + i))
            f = fs[-1]
            print(f"floor seed {f['seed']}: {f['wall_s']:.3f} s simulation, "
                  f"{f['process_s']:.3f} s process, {f['events']} events", file=sys.stderr)
    ps = []
    for i in range(args.simpy_seeds):
        ps.append(run_simpy(seed0 + i, args))
        p = ps[-1]
        print(f"SimPy seed {p['seed']}: {p['wall_s']:.1f} s simulation, "
              f"{p['process_s']:.1f} s process, {p['events']} events", file=sys.stderr)

    print(f"scenario {os.path.relpath(SCENARIO, ROOT)}"
          + (f", duration {args.duration} s" if args.duration is not None else "")
          + (f", warmup {args.warmup} s" if args.warmup is not None else ""))
    print(f"\nwall time (medians; retrysim {len(rs)} runs, SimPy {len(ps)}):")
    for key, what in [("wall_s", "simulation"), ("process_s", "whole process")]:
        a = statistics.median(r[key] for r in rs)
        b = statistics.median(p[key] for p in ps)
        print(f"  {what:<14} retrysim {a:8.3f} s   SimPy {b:8.2f} s   SimPy/retrysim {b / a:7.1f}x")
    # Events of the whole run (warm-up included); SimPy's come from its event ids.
    ev_r = statistics.median(r["events"] for r in rs)
    ev_p = [p["events"] for p in ps if p.get("events")]
    line = f"  {'events':<14} retrysim {ev_r:>10,.0f}   SimPy "
    if ev_p:
        ev_p = statistics.median(ev_p)
        line += f"{ev_p:>10,.0f}   SimPy/retrysim {ev_p / ev_r:7.2f}x"
    else:
        line += "(not counted)"
    print(line)

    print("\nagreement (retrysim: median [min, max] sd over seeds; SimPy: each seed; "
          "dev = (SimPy median - retrysim median) / retrysim sd):")
    for key, fmt in [("success_share", "{:.4f}"), ("attempts_per_request", "{:.4f}"),
                     ("wasted_fraction", "{:.4f}"), ("latency_mean_ms", "{:.2f}")]:
        med, lo, hi, sd = spread([r[key] for r in rs])
        sp = [p[key] for p in ps]
        dev = (statistics.median(sp) - med) / sd if sd > 0 else float("nan")
        print(f"  {key:<21} retrysim {fmt.format(med)} [{fmt.format(lo)}, {fmt.format(hi)}]"
              f" sd {fmt.format(sd)}   SimPy {', '.join(fmt.format(v) for v in sp)}"
              f"   dev {dev:+.1f} sd")
    if fs:
        print(f"\nfloor (benches/floor.rs, {len(fs)} runs; medians):")
        for key, what in [("wall_s", "simulation"), ("process_s", "whole process")]:
            a = statistics.median(r[key] for r in rs)
            b = statistics.median(p[key] for p in ps)
            c = statistics.median(f[key] for f in fs)
            print(f"  {what:<14} floor {c:8.3f} s   SimPy/floor {b / c:7.1f}x"
                  f"   retrysim/floor {a / c:5.2f}x")
        for key, fmt in [("success_share", "{:.4f}"), ("attempts_per_request", "{:.4f}"),
                         ("wasted_fraction", "{:.4f}")]:
            med, _, _, sd = spread([r[key] for r in rs])
            fmed, flo, fhi, _ = spread([f[key] for f in fs])
            dev = (fmed - med) / sd if sd > 0 else float("nan")
            print(f"  {key:<21} floor {fmt.format(fmed)} [{fmt.format(flo)}, {fmt.format(fhi)}]"
                  f"   retrysim {fmt.format(med)}   dev {dev:+.1f} sd")
    rounds = in_turn(args, binary, floor_bin, seed0) if args.rounds else []
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"retrysim": rs, "simpy": ps, "floor": fs, "rounds": rounds}, f, indent=1)


def in_turn(args, binary, floor_bin, seed):
    """Runs SimPy, retrysim and the floor in turn, `args.rounds` times, after
    one round to warm the caches, and prints the ratios within each round."""
    names = ["simpy", "retrysim"] + (["floor"] if floor_bin else [])
    out = tempfile.mkdtemp(prefix="retrysim-peer-")
    rounds = []
    try:
        for i in range(args.rounds + 1):
            one = {"simpy": run_simpy(seed, args),
                   "retrysim": run_retrysim(binary, seed, args, out)}
            if floor_bin:
                one["floor"] = run_floor(floor_bin, seed)
            if i == 0:
                continue
            rounds.append(one)
            print(f"round {i}: " + ", ".join(
                f"{n} {one[n]['cpu_s']:.3f} s CPU" for n in names), file=sys.stderr)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    print(f"\nin turn ({len(rounds)} rounds after a warm-up round, seed {seed}; "
          "each ratio's median [min, max] over the rounds):")
    for key, what in [("wall_s", "simulation"), ("cpu_s", "process CPU")]:
        cells = []
        for a, b in itertools.combinations(names, 2):
            q = [r[a][key] / r[b][key] for r in rounds]
            cells.append(f"{a}/{b} {statistics.median(q):6.1f}x [{min(q):.1f}, {max(q):.1f}]")
        print(f"  {what:<12} " + "   ".join(cells))
    for n in names:
        print(f"  {n:<12} CPU median {statistics.median(r[n]['cpu_s'] for r in rounds):.3f} s")
    return rounds


if __name__ == "__main__":
    main()
