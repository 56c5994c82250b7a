"""A new user's first page, three ways: the dashboard on a new store with the demo set loaded
by that first page visit (`streamlit run app.py`); the demo set loaded before the server
starts (`python -m data.demo`, D98) and then `streamlit run app.py`; and `make demo`'s way,
`python -m data.demo` then `streamlit run serve.py`, which warms the pages' imports and the
newest run's rules as it starts (D99).

Per round and way: a new store (the last two ways a copy of one loaded by `python -m
data.demo` in that round), the real server, Debian's Chromium opening the page by its URL
`--pause` seconds after the server answers its health check; the figure is the time until
the page has finished rendering (tests/helpers/browser.settle), from the navigation's start.
The ways alternate in each round, so the machine's load falls on all three. The demo load
before the server is timed on its own: a user waits for it in the terminal, before the URL
is printed.

With `--big`, the loaded store also holds the 1.3 M-event benchmark run
(benchmarks/out/big_trace.json, made by make_big_trace.py), ingested last so that it is the
newest run, the one the pages open and the warm-up computes; the first way is left out (the
page would load only the demo set).

    python benchmarks/bench_first_start.py [--rounds 3] [--page recommendations] [--pause 0]
                                           [--big]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from analysis_common import BIG, ROOT

sys.path.insert(0, str(ROOT / "tests"))
from helpers.browser import dashboard, launch, settle
from playwright import sync_api as playwright

FIRST_VISIT = "loaded by the first page"  # the way whose store starts empty
WAYS = {FIRST_VISIT: "app.py", "data.demo, app.py": "app.py",
        "data.demo, serve.py (make demo)": "serve.py"}  # fmt: skip


def first_page_s(data: Path, script: str, page_name: str, pause_s: float) -> float:
    """Seconds until the first page opened on store `data` is rendered."""
    with dashboard(data, script=script) as url, playwright.sync_playwright() as p:
        time.sleep(pause_s)
        browser = launch(p)
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        page.goto(f"{url}/{page_name}")
        drawn = settle(page, timeout_ms=300_000)
        shown = page.inner_text('[data-testid="stMain"]')
        browser.close()
    if "Median step" not in shown and page_name == "recommendations":
        raise SystemExit(f"the first {page_name} page did not show the ranking: {shown[:300]!r}")
    return drawn


def demo_before_server_s(data: Path) -> float:
    t = time.monotonic()
    subprocess.run([sys.executable, "-m", "data.demo", "--data", str(data)], cwd=ROOT,
                   check=True, capture_output=True)  # fmt: skip
    return time.monotonic() - t


def ingest_big(data: Path) -> None:
    """The benchmark run into `data`, last, so it is the newest (not timed: no user waits
    for it before the server starts)."""
    subprocess.run([sys.executable, "-m", "collectors.ingest", str(BIG), "--data", str(data),
                    "--name", "big"], cwd=ROOT, check=True, capture_output=True)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--page", default="recommendations")
    ap.add_argument("--pause", type=float, default=0.0, help="seconds before the browser opens")
    ap.add_argument("--big", action="store_true", help="the benchmark run as the newest run")
    args = ap.parse_args()
    if args.big and not BIG.exists():
        raise SystemExit(f"{BIG}: missing; make it with benchmarks/make_big_trace.py")
    print(f"load before {os.getloadavg()[0]:.1f}; page /{args.page}, pause {args.pause:g} s"
          + (", newest run: big" if args.big else ""))  # fmt: skip
    ways = {w: s for w, s in WAYS.items() if not (args.big and w == FIRST_VISIT)}
    pages: dict[str, list[float]] = {way: [] for way in ways}
    loads = []
    for r in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="first-start-") as tmp:
            loaded = Path(tmp) / "loaded"
            loads.append(demo_before_server_s(loaded))
            if args.big:
                ingest_big(loaded)
            for i, (way, script) in enumerate(ways.items()):
                store = Path(tmp) / str(i)
                if way == FIRST_VISIT:
                    store.mkdir()
                else:
                    shutil.copytree(loaded, store)
                pages[way].append(first_page_s(store, script, args.page, args.pause))
        print(f"round {r + 1}: python -m data.demo {loads[-1]:.2f} s; first page: "
              + "; ".join(f"{w} {v[-1]:.2f} s" for w, v in pages.items())
              + f"  (load {os.getloadavg()[0]:.1f})", flush=True)  # fmt: skip
    print(f"median: python -m data.demo {statistics.median(loads):.2f} s; first page: "
          + "; ".join(f"{w} {statistics.median(v):.2f} s" for w, v in pages.items()))  # fmt: skip


if __name__ == "__main__":
    main()
