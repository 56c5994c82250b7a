"""Report export: time and size of each format on a real run, end to end and in process.

    python benchmarks/bench_report.py [TRACE] [--runs N]

TRACE defaults to ../shared/fixtures/h200/train_gpt2_fp32_naive.pt.trace.json.gz (ingested
into a temporary store). For each format: the median wall time of `python -m analysis.report
RUN --format F -o FILE` (a fresh interpreter: imports included), its CPU seconds (user + sys
of the child), the file size; then, in one process, the median time of the steps: the JSON
dict (report_json), the charts (report_charts), and rendering each format from those.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from analysis_common import ROOT, timed

from analysis.facts import gather
from analysis.report.document import report_json
from analysis.report.export import FORMATS, export
from analysis.report.run import load_report
from collectors.ingest import ingest
from data.store import Store

DEFAULT = ROOT.parent / "shared" / "fixtures" / "h200" / "train_gpt2_fp32_naive.pt.trace.json.gz"


def cli(run_id: str, data: Path, fmt: str, out: Path) -> tuple[float, float]:
    """(wall s, child CPU s) of one CLI export."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "analysis.report", run_id, "--format", fmt, "-o", str(out),
         "--data", str(data)],
        cwd=ROOT, check=True,
    )  # fmt: skip
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", nargs="?", type=Path, default=DEFAULT)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    data = Path(tempfile.mkdtemp(prefix="bench-report-"))
    run_id = ingest([args.trace], data_dir=data)
    print(f"{args.trace.name}: run {run_id}")
    print("| format | CLI wall (median) | CLI CPU (median) | size |")
    print("|---|---:|---:|---:|")
    for fmt in FORMATS:
        out = data / f"report.{fmt}"
        runs = [cli(run_id, data, fmt, out) for _ in range(args.runs)]
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        print(f"| {fmt} | {wall:.2f} s | {cpu:.2f} s | {out.stat().st_size / 1e3:,.0f} kB |")
    s = Store(data)
    doc, charts = load_report(s, run_id)
    print("\nin process (median of 5 after a warm-up):")
    print(f"- report_json (reads included): {timed(lambda: report_json(gather(s, run_id))):.2f} s")
    print(f"- document and charts (reads included): {timed(lambda: load_report(s, run_id)):.2f} s")
    for fmt in FORMATS:
        print(f"- render {fmt}: {timed(lambda f=fmt: export(doc, charts, f)):.2f} s")  # type: ignore[misc]


if __name__ == "__main__":
    main()
