"""A raw telemetry read from Prometheus, every scrape (one range vector) against the grid of
last_over_time (D23), side by side in one run (D68).

One agent replays the H200 recording (data/samples/nvml_phases_h200.csv, real rows) at 0.1 s
with /metrics served; Debian's Prometheus scrapes it every 100 ms. Once 65 s are stored, the
last 60 s of the GPU are read through PrometheusTelemetry.samples both ways, alternating, so a
change of the machine's load hits both alike. Prints each read's rows and seconds.

Usage: python benchmarks/bench_prometheus_read.py [--reads N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from helpers.prometheus import agent, prometheus, wait_for  # noqa: E402

from data import reads_prometheus  # noqa: E402
from data.reads_prometheus import PrometheusTelemetry  # noqa: E402

RECORDING = ROOT / "data" / "samples" / "nvml_phases_h200.csv"
WINDOW_NS = 60 * 10**9
SPANS = {"every scrape": reads_prometheus.EXACT_SPAN_NS, "grid": 0}  # EXACT_SPAN_NS per mode


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reads", type=int, default=5, help="reads per mode (default 5)")
    args = ap.parse_args()
    d = Path(tempfile.mkdtemp(prefix="bench-prometheus-read-"))
    replay = ("--replay", RECORDING, "--loop", "--interval", "0.1", "--host", "n")
    with (
        agent(d / "agent", *replay, "--data", d / "agent") as port,
        prometheus(d / "prometheus", [f"127.0.0.1:{port}"], "100ms") as url,
    ):
        src = PrometheusTelemetry(url)

        def stored() -> bool:
            g = src.gpus()
            return len(g) == 1 and bool((g["samples"] >= 650).all())

        wait_for(stored, 200, "65 s of scrapes")
        seconds: dict[str, list[float]] = {m: [] for m in SPANS}
        for _ in range(args.reads):
            for mode, span in SPANS.items():
                reads_prometheus.EXACT_SPAN_NS = span
                end = time.time_ns()
                t0 = time.perf_counter()
                rows = len(src.samples(end - WINDOW_NS, end))
                seconds[mode].append(time.perf_counter() - t0)
                print(f"{mode}: {rows} rows in {seconds[mode][-1]:.3f} s", flush=True)
        for mode, v in seconds.items():
            print(f"{mode}: median {statistics.median(v):.3f} s over {len(v)} reads")


if __name__ == "__main__":
    main()
