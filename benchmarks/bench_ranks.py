"""Rank scaling: ingest time and peak memory, the JSON report and every page, for synthetic
runs of 8 to 512 ranks made from a real DDP trace by rank relabelling (make_rank_run.py).

    python benchmarks/bench_ranks.py [--ranks 8 32 128 512] [--pages-at 512] [--work DIR]
                                     [--reuse] [--pages overview breakdown ...] [--no-report]

Each ingest is the real CLI (`python -m collectors.ingest FOLDER --data <fresh store>`), its
process tree's summed RSS sampled every 50 ms (process_meter). The report is the real CLI
too (`python -m analysis.report RUN --format json`, interpreter start included). Pages are
server-side renders under AppTest: cold (the pages' caches emptied before the render, as
on a new server: the run's facts are read and computed) and cached (the median of 2 after
a warm-up). `--reuse` times the report and pages on the store an earlier `--keep` run left
in WORK (no ingest: 512 ranks take minutes to ingest). The machine's load average is
recorded beside every figure; results go to WORK/ranks.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from analysis_common import ROOT, page_seconds
from make_rank_run import DEFAULT_SOURCES, make_run
from process_meter import log, measure

PAGES = ("overview", "operators", "kernels", "roofline", "bandwidth", "memory", "breakdown",
         "timeline", "recommendations", "compare", "report", "runs")  # fmt: skip


def ingest(folder: Path, store: Path, jobs: int | None) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "collectors.ingest", str(folder), "--data", str(store)]
    if jobs:
        cmd += ["--jobs", str(jobs)]
    m, out, err = measure(cmd, cwd=ROOT, interval=0.05)
    if m.returncode != 0:
        sys.exit(f"ingest of {folder} failed:\n{err[-2000:]}")
    return {"run_id": out.split()[-1], "wall_s": m.wall_s, "peak_rss_mb": m.peak_rss_bytes / 1e6,
            "cpu_s": m.cpu_s, "other_cpu_s": m.other_cpu_s, "procs": m.peak_procs,
            "load_1m": m.loadavg_1m_before}  # fmt: skip


def kept_run(store: Path) -> str:
    """The one run of a store kept by an earlier `--keep`."""
    from data.store import Store

    runs = Store(store).runs()
    if len(runs) != 1:
        sys.exit(f"--reuse: {store} holds {len(runs)} runs, not one (run once with --keep)")
    return str(runs.iloc[0]["run_id"])


def report(store: Path, run_id: str, out: Path) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "analysis.report", run_id, "--format", "json", "-o", str(out),
           "--data", str(store)]  # fmt: skip
    m, _, err = measure(cmd, cwd=ROOT, interval=0.1)
    if m.returncode != 0:
        sys.exit(f"report failed:\n{err[-2000:]}")
    return {"wall_s": m.wall_s, "cpu_s": m.cpu_s, "peak_rss_mb": m.peak_rss_bytes / 1e6,
            "load_1m": m.loadavg_1m_before}  # fmt: skip


def pages(store: Path, run_id: str, page: str) -> dict[str, float]:
    import streamlit as st  # noqa: TID251 (empties the pages' caches, as a new server would)

    def cold() -> None:
        st.cache_data.clear()
        st.cache_resource.clear()

    path = f"pages/{page}.py"
    out = {
        "cold_s": page_seconds(store, run_id, path, n=1, before_each=cold),
        "cached_s": page_seconds(store, run_id, path, n=2),
        "load_1m": os.getloadavg()[0],
    }
    log(f"  page {page}: cold {out['cold_s']:.2f} s, cached {out['cached_s']:.2f} s")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, nargs="+", default=[8, 32, 128, 512])
    ap.add_argument("--pages-at", type=int, nargs="*", default=[512], help="rank counts")
    ap.add_argument("--jobs", type=int, help="the ingest's --jobs (default: its own)")
    ap.add_argument("--work", type=Path, default=ROOT / "benchmarks/out/ranks")
    ap.add_argument("--keep", action="store_true", help="keep the synthetic runs and stores")
    ap.add_argument("--reuse", action="store_true", help="time a kept store (no ingest)")
    ap.add_argument("--pages", nargs="*", default=list(PAGES), choices=PAGES)
    ap.add_argument("--no-report", action="store_true", help="time the pages only")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    rows = []
    for n in args.ranks:
        folder, store = args.work / f"r{n}", args.work / f"store{n}"
        if not folder.is_dir() or len(list(folder.iterdir())) != n:
            shutil.rmtree(folder, ignore_errors=True)
            make_run(folder, n, DEFAULT_SOURCES)
        size = sum(f.stat().st_size for f in folder.iterdir())
        row: dict[str, Any] = {"ranks": n, "mb": size / 1e6}
        if args.reuse:
            run_id = kept_run(store)
        else:
            shutil.rmtree(store, ignore_errors=True)
            log(f"{n} ranks, {size / 1e6:.0f} MB: ingest (load {os.getloadavg()[0]:.1f})")
            row["ingest"] = ingest(folder, store, args.jobs)
            run_id = row["ingest"]["run_id"]
        if not args.no_report:
            row["report"] = report(store, run_id, args.work / f"report{n}.json")
            log(f"  report: {row['report']['wall_s']:.2f} s (load {row['report']['load_1m']:.1f})")
        if n in args.pages_at:
            row["pages"] = {page: pages(store, run_id, page) for page in args.pages}
        rows.append(row)
        log(json.dumps(row))
        if not (args.keep or args.reuse):
            shutil.rmtree(store, ignore_errors=True)
    res = {"when": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "cores": os.cpu_count(), "rows": rows}
    (args.work / "ranks.json").write_text(json.dumps(res, indent=2) + "\n")
    print("| ranks | MB | ingest s | MB/s | peak RSS MB | CPU s | report s | load 1m |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        if "ingest" not in r or "report" not in r:
            continue
        i = r["ingest"]
        print(f"| {r['ranks']} | {r['mb']:.0f} | {i['wall_s']:.1f} | {r['mb'] / i['wall_s']:.0f} "
              f"| {i['peak_rss_mb']:.0f} | {i['cpu_s']:.0f} | {r['report']['wall_s']:.1f} "
              f"| {i['load_1m']:.1f} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
