"""Single-trace ingest alone and beside one competing CPU-bound process, in alternating
rounds on the same file, so a change of the machine's load hits both alike.

    python benchmarks/bench_ingest_contention.py FILE [--rounds 3]

Prints each run's wall time and the median ratio (beside / alone); the competitor is a
Python busy loop, started before the ingest and stopped after it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from analysis_common import ROOT
from process_meter import log, measure


def once(path: Path, compete: bool) -> float:
    store = Path(tempfile.mkdtemp(prefix="contention-"))
    rival = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if compete else None
    try:
        cmd = [sys.executable, "-m", "collectors.ingest", str(path), "--data", str(store)]
        m, _, err = measure(cmd, cwd=ROOT, interval=0.1)
        if m.returncode != 0:
            sys.exit(f"ingest failed:\n{err[-2000:]}")
        return m.wall_s
    finally:
        if rival is not None:
            rival.kill()
            rival.wait()
        shutil.rmtree(store, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    alone, beside = [], []
    for r in range(args.rounds):
        load = os.getloadavg()[0]
        alone.append(once(args.file, False))
        beside.append(once(args.file, True))
        log(f"round {r}: alone {alone[-1]:.2f} s, beside one busy process {beside[-1]:.2f} s "
            f"(load before {load:.1f})")  # fmt: skip
    ratio = statistics.median(b / a for a, b in zip(alone, beside, strict=True))
    mb = args.file.stat().st_size / 1e6
    print(
        f"alone: median {statistics.median(alone):.2f} s ({mb / statistics.median(alone):.1f} MB/s)"
    )
    print(f"beside one competing process: median {statistics.median(beside):.2f} s; "
          f"ratio (per round, median) {ratio:.2f}x")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
