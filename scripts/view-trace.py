#!/usr/bin/env python3
"""Opens a `retrysim run --trace N` trace.json in Chromium's own trace viewer
(the DevTools Performance panel, which ships inside Chromium and needs no
network) and saves a screenshot: a check that the file loads in a real
viewer, and a picture of what it shows.

    python3 -m venv /tmp/tv && /tmp/tv/bin/pip install websocket-client==1.9.2
    /tmp/tv/bin/python scripts/view-trace.py output/spanner-90s/trace.json \\
        trace.png --from 119.9 --to 124 --expand 0:4

Needs Debian's `chromium`. It starts a headless Chromium on 127.0.0.1 with
a throwaway profile, loads the file through the Performance panel's own
loader, prints the trace's bounds as the viewer read them (an error if it
did not load), zooms to [--from, --to] (seconds of simulated time) and
saves the screenshot.

`--expand P:K` opens the track of the P-th policy (0 = the first) and its
first K requests. The viewer offers no way to do that but the mouse, so the
script clicks where the rows are drawn in a 1600 × 1000 window (a header
row is 21 px high); a different Chromium may draw them elsewhere, which
changes the picture, not the check.
"""

import argparse
import base64
import json
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import websocket

PORT = 9333
ROW = 21  # px: one collapsed track header
TOP = 129  # px: the first header's middle
ARROW_GROUP, ARROW_TRACK = 249, 259  # px: the expand arrows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("png")
    ap.add_argument("--from", dest="lo", type=float, help="window start, s")
    ap.add_argument("--to", dest="hi", type=float, help="window end, s")
    ap.add_argument("--expand", help="P:K, policy P's track and its first K requests")
    args = ap.parse_args()
    trace = open(args.trace, encoding="utf-8").read()
    json.loads(trace)  # a file that is not JSON fails here, not in the viewer

    profile = tempfile.mkdtemp(prefix="view-trace-")
    chromium = subprocess.Popen(
        [
            "chromium",
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            f"--remote-debugging-port={PORT}",
            "--remote-allow-origins=*",
            "--window-size=1600,1000",
            f"--user-data-dir={profile}",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        return view(trace, args)
    finally:
        chromium.kill()
        chromium.wait()
        shutil.rmtree(profile, ignore_errors=True)


def view(trace: str, args) -> int:
    tabs = None
    for _ in range(100):
        try:
            tabs = json.load(urllib.request.urlopen(f"http://127.0.0.1:{PORT}/json"))
            if any(t["type"] == "page" for t in tabs):
                break
        except OSError:
            pass
        time.sleep(0.2)
    page = next(t for t in tabs if t["type"] == "page")
    ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=120)
    ids = iter(range(1, 1 << 30))

    def call(method, **params):
        n = next(ids)
        ws.send(json.dumps({"id": n, "method": method, "params": params}))
        while True:
            m = json.loads(ws.recv())
            if m.get("id") == n:
                return m

    def js(expr):
        r = call("Runtime.evaluate", expression=expr, awaitPromise=True, returnByValue=True)
        return r.get("result", {}).get("result", {}).get("value")

    call("Page.navigate", url="devtools://devtools/bundled/devtools_app.html")
    time.sleep(5)
    loaded = js(
        """(async () => {
      const UI = await import('./ui/legacy/legacy.js');
      await UI.ViewManager.ViewManager.instance().showView('timeline');
      const Timeline = await import('./panels/timeline/timeline.js');
      const panel = Timeline.TimelinePanel.TimelinePanel.instance();
      await panel.loadFromFile(new File([TRACE], 'trace.json', {type: 'application/json'}));
      return 'ok';
    })().catch(e => 'error: ' + e)""".replace("TRACE", json.dumps(trace))
    )
    if loaded != "ok":
        print(f"the viewer did not load the trace: {loaded}", file=sys.stderr)
        return 1
    time.sleep(8)
    bounds = js(
        """(async () => {
      const TB = await import('./services/trace_bounds/trace_bounds.js');
      const s = TB.TraceBounds.BoundsManager.instance().state();
      return s ? JSON.stringify(s.micro.entireTraceBounds) : null;
    })()"""
    )
    if not bounds:
        print("the viewer shows no trace", file=sys.stderr)
        return 1
    b = json.loads(bounds)
    print(f"loaded: {b['min'] / 1e6:.3f} s to {b['max'] / 1e6:.3f} s of simulated time")

    def click(x, y):
        for kind in ("mousePressed", "mouseReleased"):
            call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)
        time.sleep(1)

    if args.expand:
        p, k = (int(v) for v in args.expand.split(":"))
        click(800, 560)  # an empty spot: the first click only focuses the panel
        click(ARROW_GROUP, TOP + p * ROW)
        # Bottom first, so that each click finds its row where it was.
        for i in reversed(range(k)):
            click(ARROW_TRACK, TOP + (p + 1 + i) * ROW)
    if args.lo is not None and args.hi is not None:
        lo, hi = args.lo * 1e6, args.hi * 1e6
        js(
            """(async () => {
          const TB = await import('./services/trace_bounds/trace_bounds.js');
          TB.TraceBounds.BoundsManager.instance()
            .setTimelineVisibleWindow({min: LO, max: HI, range: HI - LO});
        })()""".replace("LO", repr(lo)).replace("HI", repr(hi))
        )
        time.sleep(4)
    shot = call("Page.captureScreenshot", format="png")
    with open(args.png, "wb") as f:
        f.write(base64.b64decode(shot["result"]["data"]))
    print(f"wrote {args.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
