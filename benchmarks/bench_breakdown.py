"""Time side on the 1.3 M-event benchmark run: breakdown, timeline level of detail, the JSON
report, and the Breakdown and Timeline pages (benchmarks/bench_analysis.py's question: every
analysis in 1 s, every page in 2 s server-side).

Reads (DuckDB → pandas) and analyses (pure pandas/numpy) are timed apart. Median of 5 runs
after one warm-up (pages: median of 3 after one, AppTest, one page run). Usage:
    python benchmarks/bench_breakdown.py [--data DIR]   (DIR: a store holding the big run;
    without it the run is built from benchmarks/out/big_trace.json into a temporary store)
"""

from __future__ import annotations

import json

from analysis_common import ROOT, big_run, page_seconds, timed

from analysis import breakdown as bd
from analysis import timeline as tl
from analysis.facts import SHAPED_OPS, Facts, gather
from analysis.figures.timeline import timeline_heatmap, timeline_kernels
from analysis.load import load_evidence
from analysis.report.document import report_json
from data import reads, reads_timeline

OUT = ROOT / "benchmarks" / "out" / "breakdown.json"
FLOOR_ANALYSIS_S = 1.0
FLOOR_PAGE_S = 2.0


def main() -> None:
    s, data, run = big_run("bench-breakdown-")
    run_id = str(run["run_id"])
    events = reads.gpu_events(s, run_id)
    steps = reads.steps(s, run_id)
    marks = reads_timeline.step_marks(s, run_id)
    per_step = bd.breakdown(events, steps)
    shares = bd.shares(per_step)
    lanes = reads_timeline.lanes(s, run_id)
    lt = tl.lane_table(lanes)
    t0, t1 = int(lanes["first_ns"].min()), int(lanes["last_ns"].max())
    size, n = tl.bucket_plan(t0, t1, len(lt))
    buckets = reads_timeline.buckets(s, run_id, t0, t1, size)
    window = reads_timeline.window_events(s, run_id, t0, t1, tl.MAX_SHAPES)
    seg = tl.segments(window, lt, t0)
    evidence = load_evidence(s, run_id, SHAPED_OPS)

    rows: dict[str, tuple[str, float]] = {
        "read gpu_events (all GPU activities)": (
            "read",
            timed(lambda: reads.gpu_events(s, run_id)),
        ),
        "read steps + step marks": (
            "read",
            timed(lambda: (reads.steps(s, run_id), reads_timeline.step_marks(s, run_id))),
        ),
        "breakdown (per rank and step)": ("analysis", timed(lambda: bd.breakdown(events, steps))),
        "shares + rank spread": (
            "analysis",
            timed(lambda: bd.rank_spread(bd.shares(per_step), per_step)),
        ),
        "launch statistics": ("analysis", timed(lambda: bd.launch_stats(events))),
        "HTA-comparable breakdown": ("analysis", timed(lambda: bd.hta_comparable(events, marks))),
        "read timeline buckets (whole run)": (
            "read",
            timed(lambda: reads_timeline.buckets(s, run_id, t0, t1, size)),
        ),
        "timeline heatmap figure (busy grid + JSON)": (
            "analysis",
            timed(
                lambda: timeline_heatmap(
                    *tl.busy_grid(buckets, lt, n, size), lt["label"].tolist(), 0.0, size / 1e6
                ).to_json()
            ),
        ),
        "read 20 k window kernels with their ops": (
            "read",
            timed(lambda: reads_timeline.window_events(s, run_id, t0, t1, tl.MAX_SHAPES)),
        ),
        "kernel segments + figure JSON (20 k)": (
            "analysis",
            timed(
                lambda: timeline_kernels(
                    tl.segments(window, lt, t0), lt["label"].tolist()
                ).to_json()
            ),
        ),
        "report JSON from loaded frames (breakdown, work, rules)": (
            "analysis",
            timed(lambda: report_json(Facts.of(evidence)), n=3),
        ),
        "report JSON: everything (reads + analyses)": (
            "end to end",
            timed(lambda: report_json(gather(s, run_id)), n=3),
        ),
    }
    # The widest window from the start that still draws every activity (at most MAX_SHAPES).
    lo, hi = 0, t1 - t0
    while hi - lo > 1_000:
        mid = (lo + hi) // 2
        count = reads_timeline.window_count(s, run_id, t0, t0 + mid)
        lo, hi = (mid, hi) if count <= tl.MAX_SHAPES else (lo, mid)
    kernels_window = {f"tl_window_{run_id}": (0.0, lo / 1e6)}
    pages = {
        "Breakdown page": page_seconds(data, run_id, "pages/breakdown.py"),
        "Timeline page, whole run (heatmap)": page_seconds(data, run_id, "pages/timeline.py"),
        "Timeline page, "
        f"{reads_timeline.window_count(s, run_id, t0, t0 + lo):,} kernels drawn": page_seconds(
            data, run_id, "pages/timeline.py", state=kernels_window
        ),
    }
    out = {
        "run": {"gpu_events": len(events), "events_total": int(run["events_total"])},
        "seconds": {k: v for k, (_, v) in rows.items()},
        "pages_seconds": pages,
        "sizes": {"heatmap_cells": len(lt) * n, "segments": len(seg)},
        "shares": {k: float(shares.iloc[-1][k]) for k in ("compute_pct", "idle_pct")},
    }
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(f"run: {int(run['events_total']):,} trace events, {len(events):,} GPU activities\n")
    print("| step | kind | median s | floor |\n|---|---|---|---|")
    for k, (kind, v) in rows.items():
        floor = "" if kind != "analysis" else ("PASS" if v <= FLOOR_ANALYSIS_S else "FAIL")
        print(f"| {k} | {kind} | {v:.3f} | {floor} |")
    for k, v in pages.items():
        print(f"| {k} | page | {v:.3f} | {'PASS' if v <= FLOOR_PAGE_S else 'FAIL'} |")


if __name__ == "__main__":
    main()
