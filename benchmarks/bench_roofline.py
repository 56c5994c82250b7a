"""Roofline and bandwidth analyses on the 1.3 M-event benchmark run (the FLOPs/bytes side of
benchmarks/bench_analysis.py's question: every analysis in 1 s, every page in 2 s).

Reads (DuckDB → pandas) and analyses (pure pandas/numpy) are timed apart; then the Roofline
and HBM bandwidth pages under AppTest (server-side render of one page run). Median of 5 runs
after one warm-up (pages: median of 3 after one). Usage:
    python benchmarks/bench_roofline.py [--data DIR]   (DIR: a store holding the big run;
    without it the run is built from benchmarks/out/big_trace.json into a temporary store)
"""

from __future__ import annotations

import json

from analysis_common import ROOT, big_run, page_seconds, timed

from analysis import bandwidth, gemm_traffic, roofline
from analysis.specs import match_spec
from data import reads, reads_roofline

OUT = ROOT / "benchmarks" / "out" / "roofline.json"


def main() -> None:
    s, data, run = big_run("bench-roofline-")
    run_id = str(run["run_id"])
    spec = match_spec(run["device_name"])
    events = reads.gpu_events(s, run_id)
    ops = reads_roofline.launching_ops(s, run_id)
    steps = reads.steps(s, run_id)
    launches = reads_roofline.tiled_gemm_launches(s, run_id)
    l2_bytes = (spec.l2_mb or 0) * 2**20 if spec else 0
    rereads = gemm_traffic.reread_bytes(launches, ops, l2_bytes)
    work = roofline.kernel_work(events, ops, rereads)
    result: dict[str, object] = {
        "run": {"events_total": int(run["events_total"]), "gpu_events": len(events),
                "launching_ops": len(ops), "tiled_gemm_launches": len(launches)},
        "reads_s": {
            "gpu_events": timed(lambda: reads.gpu_events(s, run_id)),
            "launching_ops": timed(lambda: reads_roofline.launching_ops(s, run_id)),
            "tiled_gemm_launches": timed(lambda: reads_roofline.tiled_gemm_launches(s, run_id)),
        },
        "analysis_s": {
            "reread_bytes": timed(lambda: gemm_traffic.reread_bytes(launches, ops, l2_bytes)),
            "kernel_work": timed(lambda: roofline.kernel_work(events, ops, rereads)),
            "roofline_table_op_class": timed(
                lambda: roofline.roofline_table(work, spec, None, "op_class")),
            "roofline_table_kernel": timed(
                lambda: roofline.roofline_table(work, spec, None, "name")),
            "run_compute_metrics": timed(lambda: roofline.run_compute_metrics(work, steps, spec)),
            "bandwidth_series": timed(lambda: bandwidth.bandwidth_series(work, 4.8e12)),
            "kernel_bandwidth": timed(lambda: bandwidth.kernel_bandwidth(work, 4.8e12)),
        },
    }  # fmt: skip
    pages = {p: page_seconds(data, run_id, p) for p in ("pages/roofline.py", "pages/bandwidth.py")}
    result["page_render_s"] = pages
    OUT.write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
