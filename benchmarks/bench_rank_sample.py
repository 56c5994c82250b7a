"""How far the report of a run of many ranks moves when only a sample of its ranks is
analysed (analysis.rank_sample), and how much time the sample saves.

    python benchmarks/bench_rank_sample.py [--ranks 64] [--store DIR ...] [--work DIR]

Each run is analysed twice in one process, the JSON report (analysis.report.document) of
every rank against that of the sample, timed side by side. Without `--store` the run is
made by make_rank_run.py from the eight real H200 DDP rank traces of tests/data (four
configurations: default buckets, GPU-bound, one bucket, P2P disabled), taken in turn: ranks
that differ far more than a real job's do, the worst case for a sample. `--store DIR`
compares the one run of a store kept by `bench_ranks.py --keep` (512 ranks, say).
Reported: the two wall times, the recommendations' order, each saving's difference and
the largest difference of the overall metrics.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from analysis_common import ROOT
from make_rank_run import make_run

from analysis import rank_sample
from analysis.facts import gather
from analysis.report.document import report_json
from data.store import Store

SOURCES = sorted((ROOT / "tests/data").glob("ddp_*_2rank/rank*.pt.trace.json.gz"))


def mixed_store(work: Path, ranks: int) -> Path:
    folder, store = work / f"mixed{ranks}", work / f"mixed{ranks}_store"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.rmtree(store, ignore_errors=True)
    make_run(folder, ranks, SOURCES)
    cmd = [sys.executable, "-m", "collectors.ingest", str(folder), "--data", str(store)]
    subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True)
    return store


def timed_report(store: Path, size: int) -> tuple[dict[str, Any], float]:
    rank_sample.MAX_ANALYSED_RANKS = size
    s = Store(store)
    run_id = str(s.runs().iloc[0]["run_id"])
    t = time.perf_counter()
    doc = report_json(gather(s, run_id))
    return doc, time.perf_counter() - t


def compare(store: Path) -> None:
    every, every_s = timed_report(store, 1 << 30)
    sample, sample_s = timed_report(store, 16)
    n = every["run"]["ranks"]
    print(f"\n### {store.name}: {n} ranks (load {os.getloadavg()[0]:.1f})\n")
    ranks = sample["run"]["analysed_ranks"]["ranks"]
    print(f"- report of every rank {every_s:.2f} s, of the sample {sample_s:.2f} s "
          f"({every_s / sample_s:.1f}×); sample: {ranks}")  # fmt: skip
    ids_a = [r["id"] for r in every["recommendations"]]
    ids_b = [r["id"] for r in sample["recommendations"]]
    print(f"- recommendations, every rank: {ids_a}")
    same = "same order" if ids_a == ids_b else "DIFFER"
    print(f"- recommendations, the sample: {ids_b} ({same})")
    print("\n| recommendation | saving, every rank (ms) | the sample (ms) | difference |")
    print("|---|---:|---:|---:|")
    by_id = {r["id"]: r for r in sample["recommendations"]}
    for r in every["recommendations"]:
        a = r["est_saving_ms"]
        b = by_id.get(r["id"], {}).get("est_saving_ms")
        diff = "–" if b is None or a is None else f"{b - a:+.3f} ms ({100 * (b - a) / a:+.1f} %)"
        print(f"| `{r['id']}` | {a} | {b if b is not None else 'not raised'} | {diff} |")
    m_a, m_b = every["metrics"]["overall"], sample["metrics"]["overall"]
    worst = max(
        ((k, m_a[k], m_b[k]) for k in m_a if isinstance(m_a[k], float) and m_b[k] is not None),
        key=lambda t: abs(t[2] - t[1]),
    )
    print(f"\nLargest overall-metric difference: {worst[0]} {worst[1]:.3f} (every rank) "
          f"against {worst[2]:.3f} (sample).")  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=64, help="ranks of the mixed run")
    ap.add_argument("--store", type=Path, nargs="*", default=[], help="kept stores to compare")
    ap.add_argument("--work", type=Path, default=ROOT / "benchmarks/out/rank_sample")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    stores = args.store or [mixed_store(args.work, args.ranks)]
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}, {os.cpu_count()} cores")
    for store in stores:
        compare(store)
    return 0


if __name__ == "__main__":
    sys.exit(main())
