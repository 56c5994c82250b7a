"""Every page in headless Chromium: the time until it has finished rendering, on each demo run
and on the 1.3 M-event benchmark run; then the timeline's zoom steps on the benchmark run.

The real server (`streamlit run app.py`, tests/helpers/browser.py) and Debian's Chromium
through Playwright. A page counts as rendered when Streamlit's script run has ended, every
Plotly chart has drawn its SVG, every table its canvas and the timeline component its first
window, and all of that has held a while (a first visit reruns once, D6); the figure is
that moment minus the navigation's start. A one-line Streamlit page, timed the same way
first, is this machine's floor under every figure. Each page is opened first with the
server's caches empty ("first") and then N more times in fresh browser sessions ("again",
the median), and N times in a new tab of one browser session that loaded the app before
("returning tab": the app's scripts come from its HTTP cache, as for a user who opens a
bookmark; a new Streamlit session all the same).

"nav": the same pages reached as a user moves through the app, in a server started afresh: a
click on the sidebar's link (or, to change run, a pick in the sidebar's run box) until the
page is rendered, without reloading the app (its scripts, Plotly included, stay loaded). Each
run is picked on its Overview, then every run page is visited; a second round over the big
run's pages gives the warm figures.

A zoom step is one wheel notch on the timeline's canvas until the component has drawn the new
window's detail, measured in Python from the wheel event (so the component's 140 ms wait for
the wheel to stop is included) and, by the component, from its request to the drawn detail.

    python benchmarks/bench_pages.py [--data DIR] [--again 2] [--zoom-steps 8] [--pages P ...]
                                     [--no-direct] [--no-nav] [--big PATH] [--out FILE]

DIR is a store holding the demo runs and the benchmark run; without it, a temporary one is
made (the demo runs by the server's first start, the benchmark run from
benchmarks/out/big_trace.json, or from PATH: a trace, or a folder of rank traces such as
make_rank_run.py's 512 ranks). Results in FILE (default benchmarks/out/pages.json).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from analysis_common import BIG, ROOT

sys.path.insert(0, str(ROOT / "tests"))
from helpers.browser import component_frame, dashboard, launch, settle
from playwright import sync_api as playwright

from collectors.ingest import ingest
from data.store import Store

OUT = ROOT / "benchmarks" / "out" / "pages.json"
RUN_FREE = ("runs", "upload", "live", "compare")  # pages that do not show the sidebar's run
RUN_PAGES = ("overview", "operators", "kernels", "roofline", "bandwidth", "memory",
             "breakdown", "timeline", "recommendations", "report")  # fmt: skip
VIEWPORT = {"width": 1600, "height": 1000}


def stable_ms(url: str) -> int:
    """How long a page must stay drawn to count as rendered: settle()'s 600 ms, or 250 ms for
    Live, which reruns its charts every second."""
    return 250 if url.split("?")[0].endswith("/live") else 600


def fresh(browser: Any) -> Callable[[], Any]:
    """Pages each in a new browser context: nothing cached, as for a first-time visitor."""
    return lambda: browser.new_page(viewport=VIEWPORT)


def page_seconds(new_page: Callable[[], Any], url: str) -> float:
    """Seconds from navigation start to the page rendered (held for stable_ms), in a page
    from `new_page`: fresh(browser), or a context's new_page (a tab of a session whose HTTP
    cache holds the app's scripts, as a returning user's does)."""
    page = new_page()
    try:
        page.goto(url, wait_until="commit")
        done = settle(page, timeout_ms=120_000, stable_ms=stable_ms(url))
        if page.get_by_test_id("stException").count():
            raise RuntimeError(f"{url}: {page.get_by_test_id('stException').first.inner_text()}")
        return done
    finally:
        page.close()


def ingest_demo(data: Path) -> None:
    """The demo runs into store `data`: the dashboard's first start ingests them."""
    with dashboard(data) as url, playwright.sync_playwright() as p:
        page_seconds(fresh(launch(p)), f"{url}/runs")


def nav_seconds(page: Any, url: str, page_name: str) -> float:
    """Seconds from a click on the sidebar's link to `page_name` (served at `url`) until it is
    rendered."""
    more = page.get_by_test_id("stSidebarNavViewButton")
    if more.count() and "more" in more.inner_text().lower():
        more.click()  # the sidebar lists the first pages only until asked
    href = f"{url}/{'' if page_name == 'runs' else page_name}"  # Runs is the default page
    clicked = float(page.evaluate("performance.now()")) / 1e3
    page.get_by_test_id("stSidebarNav").locator(f'a[href="{href}"]').click()
    page.wait_for_url(lambda u: u.split("?")[0] == href)
    return float(settle(page, timeout_ms=120_000, stable_ms=stable_ms(href))) - clicked


def pick_seconds(page: Any, run_id: str) -> float:
    """Seconds from picking `run_id` in the sidebar's run box until the page is rendered."""
    page.get_by_test_id("stSidebar").get_by_test_id("stSelectbox").click()
    option = page.get_by_role("option").filter(has_text=run_id.rsplit("-", 1)[-1])
    clicked = float(page.evaluate("performance.now()")) / 1e3
    option.click()
    page.wait_for_url(f"**run={run_id}*")
    return float(settle(page, timeout_ms=120_000)) - clicked


def in_app(browser: Any, url: str, targets: list[tuple[str, str]], big: str) -> dict[str, Any]:
    """Every page reached through the sidebar (module docstring): {"page · run": seconds}."""
    out: dict[str, Any] = {}
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(f"{url}/upload", wait_until="commit")
    settle(page, timeout_ms=120_000)
    out["overview · default run (link)"] = nav_seconds(page, url, "overview")
    for name, run_id in targets:
        if f"run={run_id}" not in page.url:
            if "/overview" not in page.url:
                nav_seconds(page, url, "overview")
            out[f"overview · {name} (picked)"] = pick_seconds(page, run_id)
        for page_name in RUN_PAGES[1:]:
            out[f"{page_name} · {name}"] = nav_seconds(page, url, page_name)
        done = " ".join(f"{k.split(' · ')[0]} {v:.2f}" for k, v in out.items() if name in k)
        print(f"nav {name:28} {done}", flush=True)
    for page_name in RUN_FREE:
        out[f"{page_name} · -"] = nav_seconds(page, url, page_name)
    nav_seconds(page, url, "overview")
    if f"run={big}" not in page.url:
        pick_seconds(page, big)
    for page_name in (*RUN_PAGES[1:], "overview"):
        out[f"{page_name} · big (again)"] = nav_seconds(page, url, page_name)
    page.close()
    return out


def bare_script(folder: Path) -> Path:
    """A one-line Streamlit page: what this machine needs to start a script run, send it and
    draw it, with nothing of ours in it (the floor under every page's figure)."""
    path = folder / "bare_page.py"
    path.write_text('import streamlit as st\n\nst.title("A bare page")\n')
    return path


def zoom_steps(browser: Any, url: str, steps: int) -> list[dict[str, float]]:
    """Per wheel notch towards 60 % of the canvas: seconds until the new detail is drawn."""
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(url)
    frame = component_frame(page)
    box = frame.locator("canvas").bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + 40)
    out = []
    for _ in range(steps):
        before = frame.evaluate("window.timeline.timings.length")
        t = time.perf_counter()
        page.mouse.wheel(0, -500)
        frame.wait_for_function(f"window.timeline.timings.length > {before}", timeout=60_000)
        wall = time.perf_counter() - t
        own = frame.evaluate("window.timeline.timings[window.timeline.timings.length - 1]")
        view = frame.evaluate("window.timeline.view")
        out.append({"wheel_to_drawn_s": wall, "request_to_drawn_s": own["total"] / 1e3,
                    "draw_s": own["draw"] / 1e3, "window_us": view[1] - view[0]})  # fmt: skip
    page.close()
    return out


def load() -> dict[str, float]:
    one, five, fifteen = os.getloadavg()
    return {"load_1m": one, "load_5m": five, "load_15m": fifteen}


def direct(args: Any, result: dict[str, Any], data: Path, targets: list[tuple[str, str]],
           naive: str, big: str) -> None:  # fmt: skip
    """The bare page, every page loaded by its URL in a new browser context, and the zoom."""
    with dashboard(data, bare_script(data)) as url, playwright.sync_playwright() as p:
        browser = launch(p)
        first = page_seconds(fresh(browser), url)
        again = [page_seconds(fresh(browser), url) for _ in range(args.again)]
        bare = {"first_s": first, "again_s": statistics.median(again), **load()}
        result["bare_page"] = bare
        print(f"{'bare page':45} first {first:5.2f} s  again {bare['again_s']:5.2f} s")
    with dashboard(data) as url, playwright.sync_playwright() as p:
        browser = launch(p)
        returning = browser.new_context(viewport=VIEWPORT)
        page_seconds(returning.new_page, f"{url}/runs")  # the app's scripts into its cache
        free = {p: [("-", "")] for p in RUN_FREE}
        free["compare"] = [("default pair", ""), ("naive vs big", f"?before={naive}&after={big}")]
        for page in args.pages:
            for name, run_id in free.get(page, targets):
                q = run_id if page in free else f"?run={run_id}"
                at = f"{url}/{page}{q}"
                first = page_seconds(fresh(browser), at)
                again = [page_seconds(fresh(browser), at) for _ in range(args.again)]
                tabs = [page_seconds(returning.new_page, at) for _ in range(args.again)]
                row = {"first_s": first, "again_s": statistics.median(again),
                       "returning_tab_s": statistics.median(tabs), **load()}  # fmt: skip
                result["pages"][f"{page} · {name}"] = row
                print(f"{page:16} {name:28} first {first:5.2f} s  again {row['again_s']:5.2f} s"
                      f"  returning tab {row['returning_tab_s']:5.2f} s"
                      f"  load {row['load_1m']:.1f}", flush=True)  # fmt: skip
        args.out.write_text(json.dumps(result, indent=1))  # the pages' figures, should zoom fail
        result["zoom"] = zoom_steps(browser, f"{url}/timeline?run={big}", args.zoom_steps)
        for z in result["zoom"]:
            print(
                f"zoom step: {z['wheel_to_drawn_s']:.2f} s wheel→drawn, "
                f"{z['request_to_drawn_s']:.2f} s request→drawn, window {z['window_us']:,.0f} µs"
            )
        browser.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, help="a store holding the demo runs and the big run")
    ap.add_argument("--again", type=int, default=2, help="visits after the first, per page")
    ap.add_argument("--zoom-steps", type=int, default=8)
    ap.add_argument("--pages", nargs="+", choices=(*RUN_FREE, *RUN_PAGES),
                    default=(*RUN_FREE, *RUN_PAGES), help="only these pages")  # fmt: skip
    ap.add_argument("--no-direct", action="store_true", help="skip the loads by URL and zoom")
    ap.add_argument("--no-nav", action="store_true", help="skip the visits through the app")
    ap.add_argument("--big", type=Path, default=BIG, help="the run named big: a trace or a folder")
    ap.add_argument("--out", type=Path, default=OUT, help="where the results go")
    args = ap.parse_args()
    data = args.data or Path(tempfile.mkdtemp(prefix="bench-pages-"))
    data.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"cpus": os.cpu_count(), "started": time.strftime("%F %T %Z"),
                              "load_before": load(), "pages": {}}  # fmt: skip
    ingest_demo(data)
    if not (Store(data).runs()["name"] == "big").any():
        traces = sorted(args.big.glob("*.json*")) if args.big.is_dir() else [args.big]
        ingest(traces, data_dir=data, name="big")
    runs = Store(data).runs()
    big = str(runs.loc[runs["name"] == "big", "run_id"].iloc[0])
    naive = str(runs.loc[runs["name"].str.contains("fp32_naive"), "run_id"].iloc[0])
    targets = list(zip(runs["name"], runs["run_id"], strict=True))
    if not args.no_direct:
        direct(args, result, data, targets, naive, big)
    if not args.no_nav:
        with dashboard(data) as url, playwright.sync_playwright() as p:
            browser = launch(p)
            result["nav"] = in_app(browser, url, targets, big)
            browser.close()
    result["load_after"] = load()
    args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
