"""Does scraping /metrics slow the agent's tick? Tick time with and without a scraper
hammering /metrics, side by side in one run.

The agent is NvmlSampler replaying the 2 × H200 recording (data/samples/nvml_phases_2xh200.csv,
real rows) with /metrics served in its process, as `--prometheus-port` does. Blocks of ticks
alternate: quiet, hammered (another process fetching /metrics back to back, far beyond any
real scrape interval), quiet, hammered…, so a change of the machine's load hits both alike.
Each tick is timed around NvmlSampler.tick(): reading every GPU, and, in the ticks counted
apart (`*_write`), the one-second segment write.
Usage: python benchmarks/bench_prometheus_scrape.py [--blocks N] [--ticks-per-block N]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from collectors.nvml import NvmlSampler  # noqa: E402
from collectors.nvml_prometheus import serve  # noqa: E402
from collectors.nvml_source import ReplaySource  # noqa: E402

RECORDING = ROOT / "data" / "samples" / "nvml_phases_2xh200.csv"
OUT = ROOT / "benchmarks" / "out" / "prometheus_scrape.json"
TICK_EVERY_S = 0.01  # ten times the agent's fastest interval: many ticks in a short run


def hammer(port: int, stop: Any, count: Any) -> None:
    """Fetch /metrics back to back until `stop` (an Event); `count` (a Value) counts them."""
    url = f"http://127.0.0.1:{port}/metrics"
    while not stop.is_set():
        with urllib.request.urlopen(url, timeout=10) as r:
            r.read()
        with count.get_lock():
            count.value += 1


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().strip()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ticks-per-block", type=int, default=300)
    ap.add_argument("--blocks", type=int, default=6)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sampler = NvmlSampler(Path(tmp), host="bench", source=ReplaySource([RECORDING], loop=True))
        sampler.open()
        port = serve(sampler, "127.0.0.1", 0)
        sampler.tick()
        # ticks that wrote the second's segment apart: they are 1 in 100 here, right at p99
        times: dict[str, list[float]] = {"quiet": [], "scraped": [], "quiet_write": [],
                                         "scraped_write": []}  # fmt: skip
        scrapes, scraped_s = 0, 0.0
        load_before = loadavg()
        for block in range(args.blocks):
            kind = "scraped" if block % 2 else "quiet"
            stop, count = multiprocessing.Event(), multiprocessing.Value("i", 0)
            proc = None
            if kind == "scraped":
                proc = multiprocessing.Process(target=hammer, args=(port, stop, count))
                proc.start()
                time.sleep(0.5)  # the scraper is running flat out
                count.value = 0
            t_block = time.perf_counter()
            for _ in range(args.ticks_per_block):
                written = sampler.samples_written
                t = time.perf_counter_ns()
                sampler.tick()
                elapsed_ms = (time.perf_counter_ns() - t) / 1e6
                times[kind if sampler.samples_written == written else f"{kind}_write"].append(
                    elapsed_ms
                )
                time.sleep(TICK_EVERY_S)
            if proc is not None:
                scrapes += count.value
                scraped_s += time.perf_counter() - t_block
                stop.set()
                proc.join()
        sampler.close()
    result = {
        "gpus": len(sampler.gpus),
        "ticks": {k: len(v) for k, v in times.items()},
        "tick_ms": {
            k: {"p50": percentile(v, 0.5), "p99": percentile(v, 0.99), "max": max(v)}
            for k, v in times.items()
        },
        "scrapes_per_s_while_scraped": scrapes / scraped_s,
        "loadavg_before": load_before,
        "loadavg_after": loadavg(),
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
