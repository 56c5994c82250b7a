"""How the wait between ticks changes the cost of one NVML sample (run on the device machine).

The agent's tick cost on the H200 VM had a median of 0.63-0.88 ms but a p99 of 1.2-2.5 ms
and outliers of 5-105 ms, while the same calls back to back cost ~0.11 ms: the slow ticks
follow the 100 ms sleep (BENCHMARKS.md). This samples GPU 0 with the agent's source
(collectors.nvml_source.PynvmlSource) every 100 ms, alternating the wait in blocks of 10
ticks so that a load change hits every strategy alike:
- sleep: threading.Event.wait until the tick, as the agent does today;
- spin-N: Event.wait until N ms before the tick, then poll time.monotonic() until it;
- spin: poll the whole interval (the bound: a core kept awake).
Half of the ticks run under a bf16 GEMM loop on the GPU (a training job beside the agent).
Writes OUT/tick_wake.json: per strategy and load, ticks, median, p99, max (µs).

Usage: python tools/nvml_tick_wake.py OUT_DIR [TICKS_PER_STRATEGY]
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from collectors.nvml_source import PynvmlSource

INTERVAL_S = 0.1
STRATEGIES = {"sleep": None, "spin-2": 0.002, "spin-5": 0.005, "spin": INTERVAL_S}
BLOCK = 10


def wait_until(due: float, spin_s: float | None, stop: threading.Event) -> None:
    now = time.monotonic()
    if spin_s is None:
        stop.wait(max(due - now, 0.0))
        return
    if due - now > spin_s:
        stop.wait(due - now - spin_s)
    while time.monotonic() < due:
        pass


def gemm_load(stop: threading.Event) -> None:
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    while not stop.is_set():
        for _ in range(20):
            a = (a @ a).clamp_(-1, 1)
        torch.cuda.synchronize()


def percentile(xs: list[int], q: float) -> float:
    s = sorted(xs)
    return s[min(int(q * len(s)), len(s) - 1)] / 1e3


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "tick_out")
    per_strategy = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    out.mkdir(parents=True, exist_ok=True)
    src = PynvmlSource([0])
    src.sample(0)
    never = threading.Event()
    costs: dict[str, list[int]] = {}
    names = list(STRATEGIES)
    blocks = per_strategy // BLOCK
    for load in ("idle", "gemm"):
        stop = threading.Event()
        loader = threading.Thread(target=gemm_load, args=(stop,), daemon=True)
        if load == "gemm":
            loader.start()
            time.sleep(1.0)
        due = time.monotonic() + INTERVAL_S
        for b in range(blocks * len(names)):
            name = names[b % len(names)]
            for _ in range(BLOCK // 2):  # half the block per load pass
                wait_until(due, STRATEGIES[name], never)
                t = time.perf_counter_ns()
                src.sample(0)
                costs.setdefault(f"{name} {load}", []).append(time.perf_counter_ns() - t)
                due += INTERVAL_S
                due = max(due, time.monotonic())
        stop.set()
        if loader.is_alive():
            loader.join()
    src.close()
    result = {
        k: {"ticks": len(v), "median_us": percentile(v, 0.5), "p99_us": percentile(v, 0.99),
            "max_us": max(v) / 1e3}
        for k, v in costs.items()
    }  # fmt: skip
    for k, v in result.items():
        print(f"{k:14s} {v}", flush=True)
    (out / "tick_wake.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
