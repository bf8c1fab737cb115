"""Real clients for the real-client check: open-loop Poisson arrivals.

``--client grpc``: grpcio's asyncio API on one channel whose service config
holds the ``retryPolicy`` (and, with ``--throttling``, ``retryThrottling``):
gRPC's own retry implementation decides every retry; each request is its own
asyncio task, so retries never hold up arrivals.

``--client botocore``: one botocore DynamoDB client (dummy credentials, the
loopback ``endpoint_url``) in retry mode ``--mode``; each request is a
``GetItem`` call on its own thread (open loop), or, with ``--pool N``, on a
``ThreadPoolExecutor`` of N threads (a synchronous application: a request
waits for a free thread, and the thread is held through every retry).

Arrivals are drawn once from ``--seed`` before the run (exponential gaps at
``--rate`` per second from t0 until ``--duration``). Every request is
written to ``--out`` as CSV: planned arrival, the time its call started (the
send lag is the difference), its end, its outcome; requests still open at
``t0 + duration + grace`` are written as ``unfinished``.
"""

import argparse
import csv
import json
import random
import threading
import time


def arrivals(rate, duration, seed):
    rng = random.Random(seed)
    t, out = 0.0, []
    while True:
        t += rng.expovariate(rate)
        if t >= duration:
            return out
        out.append(t)


def write(path, recs):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["planned_s", "start_s", "end_s", "outcome"])
        for r in recs:
            w.writerow([f"{r['planned']:.6f}",
                        "" if r.get("start") is None else f"{r['start']:.6f}",
                        "" if r.get("end") is None else f"{r['end']:.6f}",
                        r.get("outcome") or "unfinished"])


def grpc_config(throttling):
    cfg = {"methodConfig": [{
        "name": [{"service": "retrysim.Validation"}],
        "retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.1s", "maxBackoff": "1s",
                        "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}
    if throttling:
        cfg["retryThrottling"] = {"maxTokens": 10, "tokenRatio": 0.1}
    return json.dumps(cfg)


def run_grpc(args, plan):
    import asyncio
    import grpc

    async def main():
        channel = grpc.aio.insecure_channel(
            f"127.0.0.1:{args.port}",
            options=[("grpc.enable_retries", 1),
                     ("grpc.service_config", grpc_config(args.throttling))])
        call = channel.unary_unary("/retrysim.Validation/Call")
        recs = [{"planned": p} for p in plan]

        async def one(rec):
            rec["start"] = time.time() - args.t0
            try:
                await call(b"x")
                rec["outcome"] = "ok"
            except grpc.aio.AioRpcError as e:
                rec["outcome"] = e.code().name.lower()
            rec["end"] = time.time() - args.t0

        tasks = []
        for rec in recs:
            delay = args.t0 + rec["planned"] - time.time()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(rec)))
        rest = args.t0 + args.duration + args.grace - time.time()
        if rest > 0:
            await asyncio.wait(tasks, timeout=rest)
        write(args.out, recs)
        for t in tasks:
            t.cancel()
        await channel.close(None)

    asyncio.run(main())


def run_botocore(args, plan):
    import botocore.session
    from botocore.config import Config
    from botocore.exceptions import ClientError, BotoCoreError

    session = botocore.session.get_session()
    client = session.create_client(
        "dynamodb", region_name="us-east-1", endpoint_url=f"http://127.0.0.1:{args.port}",
        aws_access_key_id="testing", aws_secret_access_key="testing",
        config=Config(retries={"mode": args.mode}, max_pool_connections=args.connections,
                      connect_timeout=5, read_timeout=30))
    # Build the client's handlers and the first connection before t0.
    recs = [{"planned": p} for p in plan]

    def one(rec):
        rec["start"] = time.time() - args.t0
        try:
            client.get_item(TableName="t", Key={"k": {"S": "v"}})
            rec["outcome"] = "ok"
        except ClientError as e:
            rec["outcome"] = e.response.get("Error", {}).get("Code", "error")
        except BotoCoreError as e:
            rec["outcome"] = type(e).__name__
        rec["end"] = time.time() - args.t0

    threading.stack_size(512 * 1024)
    pool = None
    if args.pool:
        from concurrent.futures import ThreadPoolExecutor
        pool = ThreadPoolExecutor(max_workers=args.pool)
    for rec in recs:
        delay = args.t0 + rec["planned"] - time.time()
        if delay > 0:
            time.sleep(delay)
        if pool:
            pool.submit(one, rec)
        else:
            threading.Thread(target=one, args=(rec,), daemon=True).start()
    rest = args.t0 + args.duration + args.grace - time.time()
    if rest > 0:
        time.sleep(rest)
    write(args.out, [dict(r) for r in recs])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--client", choices=["grpc", "botocore"], required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--t0", type=float, required=True)
    p.add_argument("--rate", type=float, default=80.0)
    p.add_argument("--duration", type=float, default=40.0)
    p.add_argument("--grace", type=float, default=4.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--throttling", action="store_true")
    p.add_argument("--mode", default="standard", choices=["standard", "adaptive", "legacy"])
    p.add_argument("--pool", type=int, default=0)
    p.add_argument("--connections", type=int, default=200)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    plan = arrivals(args.rate, args.duration, args.seed)
    if args.client == "grpc":
        run_grpc(args, plan)
    else:
        run_botocore(args, plan)
    import os
    os._exit(0)  # do not wait for request threads still open


if __name__ == "__main__":
    main()
