"""A small loopback server with a fixed capacity, for the real-client check.

One process, one asyncio event loop, one front end:

* ``grpc``: a grpcio (asyncio API) server with a generic unary handler
  ``/retrysim.Validation/Call`` taking and returning raw bytes; a failure is
  answered with status UNAVAILABLE before any header or message (a
  "trailers-only" answer, which gRPC's retry logic may retry).
* ``aws``: a minimal AWS JSON 1.0 protocol over HTTP/1.1 with keep-alive
  (DynamoDB-like: any ``X-Amz-Target`` is answered ``{}``); failures are
  HTTP 503 ``ServiceUnavailable`` or, for throttling, HTTP 400 with
  ``{"__type": "com.amazonaws.dynamodb.v20120810#ThrottlingException"}``.

Behind either front end sits the same backend, the model of retrysim's queue
backend: ``workers`` workers, a first-in-first-out waiting room of
``queue_limit`` attempts, service times drawn exponential with a fixed mean
and spent in ``asyncio.sleep``, an attempt arriving to a full waiting room
answered at once (``reject`` status). A fault window ``[fault_start,
fault_start + fault_duration)`` (seconds after ``t0``) of one kind:

* ``outage``: every attempt arriving, and every attempt a worker takes from
  the waiting room, is answered UNAVAILABLE / 503 at once;
* ``throttle``: the same with throttling errors;
* ``crash``: the listening socket and every connection are closed, the
  attempts in flight are lost, and the server listens again when it ends.

Every attempt reaching the server is logged (arrival, end, outcome, drawn
and actual service time) and written as CSV when the server exits at
``t0 + run_for``.
"""

import argparse
import asyncio
import collections
import csv
import json
import os
import random
import time


class Backend:
    """Workers, a FIFO waiting room and the fault window; logs every attempt."""

    def __init__(self, args):
        self.args = args
        self.idle = args.workers
        self.waiting = collections.deque()
        self.rng = random.Random(args.seed)
        self.log = []

    def now(self):
        """Seconds since the experiment's t0 (wall clock, shared with the client)."""
        return time.time() - self.args.t0

    def fault_active(self, kinds):
        t = self.now()
        a = self.args
        return a.fault in kinds and a.fault_start <= t < a.fault_start + a.fault_duration

    def _release(self, free_at):
        """A worker is free from ``free_at`` (perf_counter): hand it to the oldest waiting attempt."""
        while self.waiting:
            fut = self.waiting.popleft()
            if not fut.done():
                fut.set_result(free_at)
                return
        self.idle += 1

    async def attempt(self):
        """Handle one attempt; returns its outcome: ok, rejected, outage, throttled."""
        arrived = self.now()
        arrived_pc = time.perf_counter()
        rec = {"arrival_s": arrived, "end_s": None, "outcome": None,
               "waited_s": 0.0, "drawn_s": None, "actual_s": None}
        self.log.append(rec)
        try:
            fault = self._fault_answer()
            if fault:
                rec["outcome"] = fault
                return fault
            free_at = time.perf_counter()
            if self.idle > 0:
                self.idle -= 1
            elif len(self.waiting) < self.args.queue_limit:
                fut = asyncio.get_running_loop().create_future()
                self.waiting.append(fut)
                try:
                    free_at = await fut
                except asyncio.CancelledError:
                    if fut.done() and not fut.cancelled():
                        self._release(fut.result())  # a worker had been handed over
                    raise
                rec["waited_s"] = self.now() - arrived
            else:
                rec["outcome"] = "rejected"
                return "rejected"
            # The worker's own clock: service starts when the worker became
            # free (its previous service's scheduled end) or when this attempt
            # arrived, whichever is later, not when this coroutine got to run,
            # so event-loop lateness does not eat capacity.
            start = max(free_at, arrived_pc)
            free_next = None
            try:
                fault = self._fault_answer()
                if fault:
                    rec["outcome"] = fault
                    return fault
                drawn = self.rng.expovariate(1.0 / self.args.mean)
                await asyncio.sleep(max(0.0, start + drawn - time.perf_counter()))
                rec["drawn_s"] = drawn
                rec["actual_s"] = time.perf_counter() - start
                rec["outcome"] = "ok"
                free_next = start + drawn
                return "ok"
            finally:
                self._release(free_next if free_next is not None else time.perf_counter())
        except asyncio.CancelledError:
            rec["outcome"] = "lost"
            raise
        finally:
            rec["end_s"] = self.now()

    def _fault_answer(self):
        if self.fault_active(("outage",)):
            return "outage"
        if self.fault_active(("throttle",)):
            return "throttled"
        return None

    def write(self, path):
        cols = ["arrival_s", "end_s", "outcome", "waited_s", "drawn_s", "actual_s"]
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(cols)
            for r in self.log:
                w.writerow(["" if r[c] is None else (f"{r[c]:.6f}" if isinstance(r[c], float) else r[c])
                            for c in cols])


class GrpcFront:
    """grpcio asyncio server with a generic unary handler (no generated code)."""

    def __init__(self, backend, port):
        self.backend = backend
        self.port = port
        self.server = None

    async def handle(self, request, context):
        import grpc
        outcome = await self.backend.attempt()
        if outcome == "ok":
            return b"ok"
        code = grpc.StatusCode.UNAVAILABLE
        if outcome == "throttled" or (outcome == "rejected" and self.backend.args.reject == "throttle"):
            code = grpc.StatusCode.RESOURCE_EXHAUSTED
        await context.abort(code, outcome)

    async def start(self):
        import grpc
        handler = grpc.method_handlers_generic_handler(
            "retrysim.Validation",
            {"Call": grpc.unary_unary_rpc_method_handler(self.handle)})
        self.server = grpc.aio.server(options=[("grpc.so_reuseport", 1)])
        self.server.add_generic_rpc_handlers((handler,))
        self.server.add_insecure_port(f"127.0.0.1:{self.port}")
        await self.server.start()

    async def stop(self):
        await self.server.stop(None)


THROTTLE_BODY = json.dumps({"__type": "com.amazonaws.dynamodb.v20120810#ThrottlingException",
                            "message": "Rate of requests exceeds the allowed throughput."}).encode()
UNAVAILABLE_BODY = json.dumps({"__type": "com.amazonaws.dynamodb.v20120810#ServiceUnavailable",
                               "message": "The service is unavailable."}).encode()
REASONS = {200: "OK", 400: "Bad Request", 503: "Service Unavailable"}


class AwsFront:
    """A minimal AWS JSON 1.0 protocol over HTTP/1.1 (keep-alive) on asyncio streams."""

    def __init__(self, backend, port):
        self.backend = backend
        self.port = port
        self.server = None
        self.conns = set()
        self.req_id = 0

    async def handle_conn(self, reader, writer):
        task = asyncio.current_task()
        self.conns.add((task, writer))
        try:
            while True:
                line = await reader.readline()
                if not line:
                    return
                length, close = 0, False
                while True:
                    h = await reader.readline()
                    if h in (b"\r\n", b"\n", b""):
                        break
                    name, _, value = h.decode("latin-1").partition(":")
                    name = name.strip().lower()
                    if name == "content-length":
                        length = int(value.strip())
                    elif name == "connection" and value.strip().lower() == "close":
                        close = True
                if length:
                    await reader.readexactly(length)
                outcome = await self.backend.attempt()
                if outcome == "ok":
                    status, body = 200, b"{}"
                elif outcome == "throttled" or (outcome == "rejected" and self.backend.args.reject == "throttle"):
                    status, body = 400, THROTTLE_BODY
                else:
                    status, body = 503, UNAVAILABLE_BODY
                self.req_id += 1
                head = (f"HTTP/1.1 {status} {REASONS[status]}\r\n"
                        f"x-amzn-RequestId: req-{self.req_id}\r\n"
                        "Content-Type: application/x-amz-json-1.0\r\n"
                        f"Content-Length: {len(body)}\r\n\r\n").encode()
                writer.write(head + body)
                await writer.drain()
                if close:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            self.conns.discard((task, writer))
            writer.close()

    async def start(self):
        self.server = await asyncio.start_server(self.handle_conn, "127.0.0.1", self.port,
                                                 reuse_address=True, backlog=1024)

    async def stop(self):
        self.server.close()
        for task, writer in list(self.conns):
            writer.transport.abort()
            task.cancel()
        self.conns.clear()


async def main(args):
    backend = Backend(args)
    front = (GrpcFront if args.frontend == "grpc" else AwsFront)(backend, args.port)
    await front.start()
    print("listening", flush=True)
    if args.fault == "crash":
        await asyncio.sleep(max(0.0, args.fault_start - backend.now()))
        await front.stop()
        await asyncio.sleep(max(0.0, args.fault_start + args.fault_duration - backend.now()))
        await front.start()
    await asyncio.sleep(max(0.0, args.run_for - backend.now()))
    await front.stop()
    backend.write(args.log)


def parse():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--frontend", choices=["grpc", "aws"], required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--t0", type=float, required=True, help="experiment start, Unix time")
    p.add_argument("--run-for", type=float, default=45.0, help="seconds after t0 to exit")
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--mean", type=float, default=0.040, help="mean service time, seconds")
    p.add_argument("--queue-limit", type=int, default=40)
    p.add_argument("--reject", choices=["unavailable", "throttle"], default="unavailable")
    p.add_argument("--fault", choices=["none", "outage", "throttle", "crash"], default="outage")
    p.add_argument("--fault-start", type=float, default=10.0)
    p.add_argument("--fault-duration", type=float, default=10.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--log", required=True)
    return p.parse_args()


if __name__ == "__main__":
    try:
        # Ahead of the client on a shared machine, where allowed: the server's
        # timing is what the comparison measures.
        os.nice(-5)
    except OSError:
        pass
    asyncio.run(main(parse()))
