"""Two checkouts' pages side by side in headless Chromium: each page opened by its URL, the
two servers alternating visit by visit, so that the host's drift (this VM's speed moves by a
third within minutes) falls on both alike.

Both servers serve copies of one store holding the demo runs. Per page and side: the median
seconds until the page is rendered (bench_pages.page_seconds) in a new browser context
("new browser": nothing cached) and in a new tab of a context that loaded the app before
("returning tab": the scripts come from its HTTP cache).

    python benchmarks/bench_pages_ab.py [BASE] [--visits 4] [--pages P ...] [--out FILE]

BASE is a checkout's folder or a git revision of this one (default HEAD~1, checked out in a
temporary worktree for the run).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from analysis_common import ROOT
from bench_pages import RUN_FREE, RUN_PAGES, VIEWPORT, fresh, ingest_demo, load, page_seconds
from helpers.browser import dashboard, launch
from playwright import sync_api as playwright

OUT = ROOT / "benchmarks" / "out" / "pages_ab.json"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base", nargs="?", default="HEAD~1", help="a checkout's folder or a revision")
    ap.add_argument("--visits", type=int, default=4, help="visits per page, side and mode")
    ap.add_argument("--pages", nargs="+", choices=(*RUN_FREE, *RUN_PAGES),
                    default=(*RUN_FREE, *RUN_PAGES))  # fmt: skip
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-pages-ab-"))
    with ExitStack() as cleanup:
        cleanup.callback(shutil.rmtree, folder, ignore_errors=True)  # the two stores
        base = Path(args.base)
        if not base.is_dir():
            base = folder / "checkout"
            git = ["git", "-C", str(ROOT), "worktree"]
            subprocess.run([*git, "add", "--detach", str(base), args.base], check=True)
            cleanup.callback(subprocess.run, [*git, "remove", "--force", str(base)], check=True)
        compare(args, folder, base)


def server(checkout: Path) -> str:
    """The checkout's server script: serve.py (D99), app.py in a revision before it."""
    return "serve.py" if (checkout / "serve.py").is_file() else "app.py"


def compare(args: argparse.Namespace, folder: Path, base: Path) -> None:
    """Both checkouts' pages, alternating; the medians printed and written to args.out."""
    stores = {"head": folder / "head", "base": folder / "base"}
    stores["head"].mkdir()
    ingest_demo(stores["head"])
    shutil.copytree(stores["head"], stores["base"])
    checkouts = {"head": ROOT, "base": base.resolve()}
    result: dict[str, Any] = {"base": str(checkouts["base"]), "started": time.strftime("%F %T %Z"),
                              "load_before": load(), "pages": {}}  # fmt: skip
    with ExitStack() as stack, playwright.sync_playwright() as p:
        urls = {k: stack.enter_context(dashboard(stores[k], server(c), cwd=c))
                for k, c in checkouts.items()}  # fmt: skip
        browser = launch(p)
        returning = {k: browser.new_context(viewport=VIEWPORT) for k in stores}
        for k, url in urls.items():
            page_seconds(returning[k].new_page, f"{url}/runs")  # the scripts into its cache
        for page in args.pages:
            times: dict[str, list[float]] = {f"{k} {m}": [] for k in stores for m in ("new", "tab")}
            for visit in range(args.visits):
                order = ("head", "base") if visit % 2 == 0 else ("base", "head")
                for k in order:
                    at = f"{urls[k]}/{page}"
                    times[f"{k} new"].append(page_seconds(fresh(browser), at))
                    times[f"{k} tab"].append(page_seconds(returning[k].new_page, at))
            row = {k: statistics.median(v) for k, v in times.items()} | {"all": times, **load()}
            result["pages"][page] = row
            print(f"{page:16} new browser: head {row['head new']:5.2f} base {row['base new']:5.2f}"
                  f"   returning tab: head {row['head tab']:5.2f} base {row['base tab']:5.2f}"
                  f"   load {row['load_1m']:.1f}", flush=True)  # fmt: skip
        browser.close()
    result["load_after"] = load()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
