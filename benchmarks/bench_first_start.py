"""A new user's first page: the dashboard on a new store, with the demo set loaded by that
first page visit, against `make demo`'s way, the demo set loaded before the server starts
(`python -m data.demo`).

Per round and way: a new store, the real server (`streamlit run app.py`), Debian's Chromium
opening /recommendations by its URL; the figure is the time until the page has finished
rendering (tests/helpers/browser.settle), from the navigation's start. The two ways alternate
in each round, so the machine's load falls on both. The demo load before the server is
timed on its own: a user waits for it in the terminal, before the URL is printed.

    python benchmarks/bench_first_start.py [--rounds 3] [--page recommendations]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from analysis_common import ROOT

sys.path.insert(0, str(ROOT / "tests"))
from helpers.browser import dashboard, launch, settle
from playwright import sync_api as playwright


def first_page_s(data: Path, page_name: str) -> float:
    """Seconds until the first page opened on store `data` is rendered."""
    with dashboard(data) as url, playwright.sync_playwright() as p:
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--page", default="recommendations")
    args = ap.parse_args()
    print(f"load before {os.getloadavg()[0]:.1f}", flush=True)
    in_page, before, after = [], [], []
    for r in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="first-start-") as tmp:
            in_page.append(first_page_s(Path(tmp), args.page))
        with tempfile.TemporaryDirectory(prefix="first-start-") as tmp:
            before.append(demo_before_server_s(Path(tmp)))
            after.append(first_page_s(Path(tmp), args.page))
        print(f"round {r + 1}: loaded by the first page {in_page[-1]:.2f} s; "
              f"python -m data.demo {before[-1]:.2f} s, then the first page {after[-1]:.2f} s"
              f"  (load {os.getloadavg()[0]:.1f})", flush=True)  # fmt: skip
    print(f"median: first page {statistics.median(in_page):.2f} s with the demo loaded by it; "
          f"{statistics.median(after):.2f} s after python -m data.demo "
          f"({statistics.median(before):.2f} s, before the server)")  # fmt: skip


if __name__ == "__main__":
    main()
