"""Runs the real-client check and compares it with retrysim's prediction.

For each experiment: ``RUNS`` real runs (a server process and a client
process on 127.0.0.1, each run with other arrival and service seeds), then
``retrysim run`` on ``validation/scenarios/<experiment>.json`` with
``SEEDS`` replications, then the comparison. Writes ``validation/results/``
(raw logs, retrysim's output, ``summary.json``) and, with ``--docs``, the
committed copy: ``docs/validation/results.md`` (the table) and one PNG per
experiment.

Environment: ``RETRYSIM`` (the binary; default ``target/release/retrysim``),
``RUNS`` (3), ``SEEDS`` (10), ``RUN_SECONDS`` (40: arrivals from 0 to this;
the scenarios are written for 40).
"""

import argparse
import csv
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results")
DOCS = os.path.join(ROOT, "docs", "validation")

# The setting of the comparison (issue 44): 4 workers, 40 ms mean service
# (capacity 100/s), a 40-slot waiting room, Poisson arrivals at 80/s, a
# fault from 10 s to 20 s.
FAULT_START, FAULT_END, CAPACITY = 10.0, 20.0, 100.0
EXPERIMENTS = {
    "grpc-retry": {
        "what": "grpcio, service-config retryPolicy (5 attempts, 0.1 s x2, max 1 s, UNAVAILABLE); outage (UNAVAILABLE)",
        "client": ["--client", "grpc"], "server": ["--frontend", "grpc", "--fault", "outage"]},
    "grpc-throttling": {
        "what": "as grpc-retry plus retryThrottling (maxTokens 10, tokenRatio 0.1)",
        "client": ["--client", "grpc", "--throttling"], "server": ["--frontend", "grpc", "--fault", "outage"]},
    "aws-standard": {
        "what": "botocore DynamoDB client, retry mode standard; outage (HTTP 503)",
        "client": ["--client", "botocore", "--mode", "standard"], "server": ["--frontend", "aws", "--fault", "outage"]},
    "aws-adaptive": {
        "what": "botocore DynamoDB client, retry mode adaptive; throttling (HTTP 400 ThrottlingException) during the fault and when the waiting room is full",
        "client": ["--client", "botocore", "--mode", "adaptive"],
        "server": ["--frontend", "aws", "--fault", "throttle", "--reject", "throttle"]},
    "aws-legacy-dynamodb": {
        "what": "botocore DynamoDB client, retry mode legacy (10 attempts, 50 ms x 2^n, no jitter); outage (HTTP 503)",
        "client": ["--client", "botocore", "--mode", "legacy"], "server": ["--frontend", "aws", "--fault", "outage"]},
    "grpc-crash": {
        "what": "as grpc-retry, but the server stops listening from 10 s to 20 s (crash) and listens again",
        "client": ["--client", "grpc"], "server": ["--frontend", "grpc", "--fault", "crash"],
        "closest": "grpc-retry"},
    "aws-pool": {
        "what": "as aws-legacy-dynamodb, each request on a pool of 400 threads (a synchronous application)",
        "client": ["--client", "botocore", "--mode", "legacy", "--pool", "400", "--connections", "400"],
        "server": ["--frontend", "aws", "--fault", "outage"],
        "closest": "aws-legacy-dynamodb"},
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except OSError:
        return float("nan")


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def fnum(x):
    return float(x) if x not in ("", None) else None


# ---------------------------------------------------------------- real runs

class Failed(Exception):
    """A step of the check that could not be done; its message says why."""


def env_number(name, default, kind):
    """The environment variable `name` read as `kind` (int or float), at least 1."""
    text = os.environ.get(name, str(default))
    try:
        value = kind(text)
    except ValueError:
        value = 0  # refused below, as is NaN
    if not value >= 1:
        raise Failed(f"{name}={text!r}: expected a number of at least 1 (default {default})")
    return value


def real_run(name, exp, run, seconds):
    out = os.path.join(RESULTS, name, f"run{run}")
    os.makedirs(out, exist_ok=True)
    load = loadavg()
    if load > 1.0:
        print(f"  note: load average {load:.2f} (the machine is busy; figures are noisier)", flush=True)
    port = free_port()
    t0 = time.time() + 3.0
    py = sys.executable
    server = subprocess.Popen(
        [py, os.path.join(HERE, "server.py"), *exp["server"], "--port", str(port), "--t0", f"{t0:.6f}",
         "--run-for", str(seconds + 5), "--seed", str(100 + run), "--log", os.path.join(out, "server.csv")],
        stdout=subprocess.DEVNULL)
    client = subprocess.run(
        [py, os.path.join(HERE, "client.py"), *exp["client"], "--port", str(port), "--t0", f"{t0:.6f}",
         "--duration", str(seconds), "--grace", "4", "--seed", str(run), "--out", os.path.join(out, "client.csv")],
        capture_output=True, text=True)
    try:
        server.wait(timeout=60)
    except subprocess.TimeoutExpired:
        server.kill()
        raise Failed(f"{name} run {run}: the server did not stop within 60 s of the run's end")
    if client.returncode != 0:
        raise Failed(f"{name} run {run}: the client failed (exit {client.returncode}):\n{client.stderr[-2000:]}")
    if server.returncode != 0:
        raise Failed(f"{name} run {run}: the server failed (exit {server.returncode}); its log: {out}")
    meta = {"load_before": load, "load_after": loadavg(), "port": port, "seconds": seconds}
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f)


def recovery_after(good, demand, start_bin, window=3, threshold=0.9):
    """First bin >= start_bin from which the next `window` bins together are healthy, minus start."""
    for t in range(start_bin, len(good) - window + 1):
        if sum(good[t:t + window]) >= threshold * sum(demand[t:t + window]):
            return float(t - start_bin)
    return None


def overload_after(attempts):
    """Seconds (1 s bins) from the fault's end on with more attempts at the server than its capacity."""
    return float(sum(1 for a in attempts[int(FAULT_END):] if a > CAPACITY))


def analyse_real(name, seconds):
    runs = []
    d = os.path.join(RESULTS, name)
    for run in sorted(x for x in os.listdir(d) if x.startswith("run")):
        srv = read_csv(os.path.join(d, run, "server.csv"))
        cli = read_csv(os.path.join(d, run, "client.csv"))
        meta = json.load(open(os.path.join(d, run, "meta.json")))
        n = int(seconds)
        attempts = [0] * n
        for r in srv:
            t = float(r["arrival_s"])
            if 0 <= t < seconds:
                attempts[int(t)] += 1
        demand, good = [0] * n, [0] * n
        ok = 0
        first_ok = None
        lags = []
        for r in cli:
            p = float(r["planned_s"])
            demand[int(p)] += 1
            if r["start_s"]:
                lags.append(float(r["start_s"]) - p)
            if r["outcome"] == "ok":
                e = float(r["end_s"])
                if e < seconds:  # as retrysim: a request still open at the end has not succeeded
                    ok += 1
                    good[int(e)] += 1
                if e >= FAULT_END and (first_ok is None or e < first_ok):
                    first_ok = e
        served = [r for r in srv if r["outcome"] == "ok"]
        errs = sorted(float(r["actual_s"]) - float(r["drawn_s"]) for r in served)
        lags.sort()
        runs.append({
            "attempts_series": attempts, "demand_series": demand, "good_series": good,
            "attempts_per_request": sum(attempts) / max(1, len(cli)),
            "fault_attempts_rps": sum(attempts[int(FAULT_START):int(FAULT_END)]) / (FAULT_END - FAULT_START),
            "success": ok / max(1, len(cli)),
            "recovery_s": recovery_after(good, demand, int(FAULT_END)),
            "overload_s": overload_after(attempts),
            "first_ok_after_fault_s": None if first_ok is None else first_ok - FAULT_END,
            "service_err_mean_ms": 1000 * sum(errs) / max(1, len(errs)),
            "service_err_p99_ms": 1000 * errs[int(0.99 * (len(errs) - 1))] if errs else None,
            "send_lag_p50_ms": 1000 * lags[len(lags) // 2] if lags else None,
            "send_lag_p99_ms": 1000 * lags[int(0.99 * (len(lags) - 1))] if lags else None,
            "send_lag_max_s": lags[-1] if lags else None,
            "load_before": meta["load_before"],
        })
    return runs


# ---------------------------------------------------------------- retrysim

def simulate(name, seeds):
    """retrysim's prediction for an experiment; where this binary cannot read its
    scenario, the reason, and the prediction of the closest scenario it can read
    (the experiment's ``closest``: an outage for a crash, open arrivals for a pool)."""
    result = simulate_scenario(name, name, seeds)
    closest = EXPERIMENTS[name].get("closest")
    if "unsupported" in result and closest:
        other = simulate_scenario(name, closest, seeds)
        if "policies" in other:
            result["closest"] = {"scenario": closest, **other}
    return result


def simulate_scenario(name, scenario_name, seeds):
    binary = os.environ.get("RETRYSIM", os.path.join(ROOT, "target", "release", "retrysim"))
    scenario = os.path.join(HERE, "scenarios", f"{scenario_name}.json")
    if not os.path.exists(binary):
        return {"unsupported": f"no retrysim binary at {binary} (set RETRYSIM)"}
    check = subprocess.run([binary, "check", scenario], capture_output=True, text=True)
    if check.returncode != 0:
        first = next((l for l in check.stderr.splitlines() if l.startswith("error")), check.stderr.strip())
        return {"unsupported": "not supported by this retrysim binary: " + first.replace(ROOT + "/", "")}
    out = os.path.join(RESULTS, name, "sim" if scenario_name == name else "sim-closest")
    if os.path.isdir(out):
        shutil.rmtree(out)
    subprocess.run([binary, "run", scenario, "--replications", str(seeds), "-o", out, "-q", "--no-plots"],
                   check=True)
    scen = json.load(open(scenario))
    folder = os.path.join(out, scen["name"])
    ts = read_csv(os.path.join(folder, "timeseries.csv"))
    reps = read_csv(os.path.join(folder, "replications.csv"))
    policies = {}
    for row in ts:
        p = policies.setdefault(row["policy"], {})
        r = p.setdefault(row["replication"], {"attempts_series": [], "demand_series": [], "good_series": []})
        r["attempts_series"].append(float(row["offered_rps"]))
        r["demand_series"].append(float(row["demand_rps"]))
        r["good_series"].append(float(row["goodput_rps"]))
    success = {(r["policy"], r["replication"]): float(r["success_rate"]) for r in reps}
    result = {}
    for pol, reps_ in policies.items():
        runs = []
        for rep, r in reps_.items():
            a, d = r["attempts_series"], r["demand_series"]
            runs.append({
                **r,
                "attempts_per_request": sum(a) / max(1.0, sum(d)),
                "fault_attempts_rps": sum(a[int(FAULT_START):int(FAULT_END)]) / (FAULT_END - FAULT_START),
                "success": success.get((pol, rep)),
                "recovery_s": recovery_after(r["good_series"], d, int(FAULT_END)),
                "overload_s": overload_after(a),
            })
        result[pol] = runs
    return {"policies": result, "order": list(policies)}


# ---------------------------------------------------------------- report

def spread(values, fmt):
    vals = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not vals:
        return "—"
    mean = sum(vals) / len(vals)
    if len(vals) == 1:
        return fmt.format(mean)
    return f"{fmt.format(mean)} [{fmt.format(min(vals))}–{fmt.format(max(vals))}]"


METRICS = [("attempts_per_request", "attempts / request", "{:.2f}"),
           ("fault_attempts_rps", "attempts/s at the server, 10–20 s", "{:.0f}"),
           ("success", "success share", "{:.3f}"),
           ("recovery_s", "recovery after the fault, s", "{:.0f}"),
           ("overload_s", "seconds above capacity after the fault", "{:.1f}")]


def plot(name, real, sim, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    fig, ax = plt.subplots(figsize=(11, 4), dpi=100)
    ax.axvspan(FAULT_START, FAULT_END, color="0.9", label="fault")
    ax.axhline(CAPACITY, color="0.4", ls=":", lw=1, label="capacity")
    if sim and "policies" in sim:
        for i, pol in enumerate(sim["order"]):
            arr = np.array([r["attempts_series"] for r in sim["policies"][pol]])
            x = np.arange(arr.shape[1]) + 0.5
            color = ["C0", "C2", "C4"][i % 3]
            if i == 0:
                ax.fill_between(x, arr.min(0), arr.max(0), color=color, alpha=0.25,
                                label=f"retrysim {pol}: min–max of {arr.shape[0]} seeds")
                ax.plot(x, arr.mean(0), color=color, lw=1.5, label=f"retrysim {pol}: mean")
            else:
                ax.plot(x, arr.mean(0), color=color, lw=1, ls="--", label=f"retrysim {pol} (mean)")
    if sim and "closest" in sim:
        close = sim["closest"]
        pol = close["order"][0]
        arr = np.array([r["attempts_series"] for r in close["policies"][pol]])
        x = np.arange(arr.shape[1]) + 0.5
        ax.fill_between(x, arr.min(0), arr.max(0), color="0.5", alpha=0.25,
                        label=f"closest supported ({close['scenario']}, {pol}): min–max of {arr.shape[0]} seeds")
        ax.plot(x, arr.mean(0), color="0.3", lw=1, ls="--", label="closest supported: mean")
    for i, r in enumerate(real):
        x = np.arange(len(r["attempts_series"])) + 0.5
        ax.plot(x, r["attempts_series"], color="C3", lw=0.9, alpha=0.8,
                label=f"real, {len(real)} runs" if i == 0 else None)
    ax.set_xlabel("time, s")
    ax.set_ylabel("attempts per second at the server")
    ax.set_title(name + ("" if sim and "policies" in sim else ": not supported by this retrysim binary"))
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_xlim(0, len(real[0]["attempts_series"]) if real else 40)
    fig.tight_layout()
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)


def provenance(names, runs, seeds):
    """When the real runs were made, and with which client libraries."""
    import grpc
    import botocore
    times = []
    for name in names:
        d = os.path.join(RESULTS, name)
        for run in (os.listdir(d) if os.path.isdir(d) else []):
            f = os.path.join(d, run, "client.csv")
            if os.path.exists(f):
                times.append(os.path.getmtime(f))
    when = ""
    if times:
        fmt = "%Y-%m-%d %H:%M"
        when = (f"Real runs made {time.strftime(fmt, time.gmtime(min(times)))} to "
                f"{time.strftime(fmt, time.gmtime(max(times)))} UTC, ")
    return (f"{when}Python {sys.version.split()[0]}, grpcio {grpc.__version__}, "
            f"botocore {botocore.__version__}, {os.cpu_count()} CPUs; {runs} real runs and {seeds} "
            f"retrysim seeds per experiment.")


def counts(summary):
    """The number of real runs per experiment (a range where they differ) and of retrysim seeds behind
    the table (the largest seen)."""
    per = sorted({len(s["real"]) for s in summary.values() if s["real"]})
    runs = str(per[0]) if len(per) == 1 else f"{per[0]} to {per[-1]}" if per else "0"
    seeds = 0
    for s in summary.values():
        sim = s["sim"] or {}
        sim = sim if "policies" in sim else sim.get("closest") or {}
        for pol in sim.get("policies", {}).values():
            seeds = max(seeds, len(pol))
    return runs, seeds


def report(names, seconds, docs):
    summary = {}
    lines = []
    for name in names:
        real = analyse_real(name, seconds) if os.path.isdir(os.path.join(RESULTS, name)) else []
        simf = os.path.join(RESULTS, name, "sim.json")
        sim = json.load(open(simf)) if os.path.exists(simf) else None
        summary[name] = {"real": [{k: v for k, v in r.items() if not k.endswith("_series")} for r in real],
                         "sim": sim}
        if real:
            plot(name, real, sim, os.path.join(RESULTS, f"{name}.png"))
    with open(os.path.join(RESULTS, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1, default=str)
    # The comparison table.
    lines.append("| experiment | figure | real (mean [min–max] of runs) | retrysim (mean [min–max] of seeds) |")
    lines.append("|---|---|---|---|")
    for name in names:
        s = summary[name]
        if not s["real"]:
            continue
        sim = s["sim"]
        first = sim["order"][0] if sim and "policies" in sim else None
        for key, label, fmt in METRICS:
            realv = spread([r[key] for r in s["real"]], fmt)
            if first:
                simv = spread([r[key] for r in sim["policies"][first]], fmt) + f" (`{first}`)"
                for other in sim["order"][1:]:
                    simv += f"; `{other}`: " + spread([r[key] for r in sim["policies"][other]], fmt)
            else:
                simv = sim["unsupported"].split(":")[0] if sim and "unsupported" in sim else "not simulated"
                close = (sim or {}).get("closest")
                if close:
                    pol = close["order"][0]
                    simv += (f"; closest supported (`{close['scenario']}` scenario, `{pol}`): "
                             + spread([r[key] for r in close["policies"][pol]], fmt))
            lines.append(f"| {name} | {label} | {realv} | {simv} |")
    lines.append("")
    for name in names:
        sim = summary[name]["sim"]
        if sim and "unsupported" in sim:
            lines.append(f"- {name}: {sim['unsupported']}")
    lines.append("")
    lines.append("Testbed overhead and machine load per experiment (real runs):")
    lines.append("")
    lines.append("| experiment | load average before each run | service time overshoot, mean / p99 ms "
                 "| client send lag p50 / p99 ms | latest request start, s after its arrival "
                 "| first success after the fault, s |")
    lines.append("|---|---|---|---|---|---|")
    for name in names:
        rs = summary[name]["real"]
        if not rs:
            continue
        lines.append("| {} | {} | {} / {} | {} / {} | {} | {} |".format(
            name, ", ".join(f"{r['load_before']:.2f}" for r in rs),
            spread([r["service_err_mean_ms"] for r in rs], "{:.2f}"),
            spread([r["service_err_p99_ms"] for r in rs], "{:.2f}"),
            spread([r["send_lag_p50_ms"] for r in rs], "{:.2f}"),
            spread([r["send_lag_p99_ms"] for r in rs], "{:.1f}"),
            spread([r["send_lag_max_s"] for r in rs], "{:.2f}"),
            spread([r["first_ok_after_fault_s"] for r in rs], "{:.2f}")))
    table = "\n".join(lines) + "\n"
    with open(os.path.join(RESULTS, "table.md"), "w") as f:
        f.write(table)
    print(table)
    if docs:
        os.makedirs(DOCS, exist_ok=True)
        for name in names:
            png = os.path.join(RESULTS, f"{name}.png")
            if os.path.exists(png):
                shutil.copy(png, os.path.join(DOCS, f"{name}.png"))
        with open(os.path.join(DOCS, "results.md"), "w") as f:
            f.write("# Real clients against retrysim: the measured table\n\n"
                    "Written by `validation/run.sh --docs` (see [README.md](README.md) for the setting "
                    "and what the differences mean). " + provenance(names, *counts(summary)) + "\n\n" + table + "\n")
            for name in names:
                if summary[name]["real"]:
                    f.write(f"## {name}\n\n{EXPERIMENTS[name]['what']}.\n\n![{name}]({name}.png)\n\n")


def main():
    p = argparse.ArgumentParser(
        prog="validation/run.sh", description=__doc__.splitlines()[0],
        epilog="Environment: RETRYSIM (the binary; default target/release/retrysim), RUNS (real runs per "
               "experiment, 3), SEEDS (retrysim replications, 10), RUN_SECONDS (arrivals from 0 to this, 40).")
    p.add_argument("experiments", nargs="*", help="default: all of " + ", ".join(EXPERIMENTS))
    p.add_argument("--report-only", action="store_true", help="redo the table and plots from validation/results")
    p.add_argument("--sim-only", action="store_true", help="rerun retrysim only, keep the real runs")
    p.add_argument("--docs", action="store_true", help="also write docs/validation/ (results.md, PNGs)")
    a = p.parse_args()
    names = a.experiments or list(EXPERIMENTS)
    for n in names:
        if n not in EXPERIMENTS:
            raise Failed(f"unknown experiment {n!r}; known: {', '.join(EXPERIMENTS)}")
    runs = env_number("RUNS", 3, int)
    seeds = env_number("SEEDS", 10, int)
    seconds = env_number("RUN_SECONDS", 40, float)
    binary = os.environ.get("RETRYSIM", os.path.join(ROOT, "target", "release", "retrysim"))
    if not a.report_only and not os.access(binary, os.X_OK):
        raise Failed(f"no retrysim binary at {binary}: run `cargo build --release` or set RETRYSIM")
    if a.report_only:
        missing = [n for n in names if not os.path.isdir(os.path.join(RESULTS, n))]
        if missing:
            raise Failed(f"no results yet for {', '.join(missing)} in {RESULTS}: run the experiments first "
                         "(validation/run.sh [EXPERIMENT...])")
    if a.docs:
        # docs/validation/ holds every experiment's row: refuse before a long run that would leave
        # the table short of the experiments neither run now nor run before.
        absent = [n for n in EXPERIMENTS if n not in names and not os.path.isdir(os.path.join(RESULTS, n))]
        if absent:
            raise Failed(f"--docs rewrites docs/validation/ for every experiment, and {', '.join(absent)} "
                         "have no results: run them too, or drop --docs")
    if not a.report_only:
        for name in names:
            if not a.sim_only:
                shutil.rmtree(os.path.join(RESULTS, name), ignore_errors=True)
                for run in range(1, runs + 1):
                    print(f"{name}: real run {run}/{runs} ({seconds:.0f} s)", flush=True)
                    real_run(name, EXPERIMENTS[name], run, seconds)
            sim = simulate(name, seeds)
            os.makedirs(os.path.join(RESULTS, name), exist_ok=True)
            with open(os.path.join(RESULTS, name, "sim.json"), "w") as f:
                json.dump(sim, f)
            print(f"{name}: retrysim: {sim.get('unsupported', 'ok')}", flush=True)
    # The docs' table covers every experiment, the ones run before included.
    report(list(EXPERIMENTS) if a.docs else names, seconds, a.docs)


if __name__ == "__main__":
    try:
        main()
    except Failed as e:
        sys.exit(f"error: {e}")
