"""Time every NVML call the agent makes per sample, on GPU 0 (run on the device machine).

Prints and writes OUT/call_cost.json: median/p99/max µs of 300 calls each, plus a cProfile
of 50 agent samples (collectors.nvml_source.PynvmlSource.sample) 100 ms apart, plus
(`cold`) every call timed once per tick for 300 ticks 100 ms apart with the agent's wait
(sleep, then poll the last WAKE_SPIN_S), idle and then under a bf16 GEMM loop: which calls
make the ticks over 1 ms.

Usage: python tools/nvml_call_cost.py OUT_DIR
"""

from __future__ import annotations

import cProfile
import json
import pstats
import subprocess
import sys
import time
from pathlib import Path

import pynvml as N

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from collectors.nvml import WAKE_SPIN_S
from collectors.nvml_source import PynvmlSource
from collectors.nvml_source.gpu import _GPM_IDS
from tools.nvml_calls import agent_calls

GPM_METRICS = [v for k, v in _GPM_IDS.items() if "nvlink" not in k]  # no NVLink on one H200

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "cost_out")


def timed(fn, n: int = 300) -> dict[str, float]:
    t = []
    for _ in range(n):
        s = time.perf_counter_ns()
        fn()
        t.append(time.perf_counter_ns() - s)
    t.sort()
    return {"median_us": t[n // 2] / 1e3, "p99_us": t[int(n * 0.99)] / 1e3, "max_us": t[-1] / 1e3}


def cold(calls: dict, ticks: int = 300) -> dict[str, dict[str, float]]:
    per: dict[str, list[int]] = {name: [] for name in calls} | {"tick": []}
    due = time.monotonic()
    for _ in range(ticks):
        due += 0.1
        time.sleep(max(due - time.monotonic() - WAKE_SPIN_S, 0.0))
        while time.monotonic() < due:
            pass
        t0 = time.perf_counter_ns()
        for name, fn in calls.items():
            s = time.perf_counter_ns()
            fn()
            per[name].append(time.perf_counter_ns() - s)
        per["tick"].append(time.perf_counter_ns() - t0)
    out = {}
    for name, t in per.items():
        t.sort()
        out[name] = {"median_us": t[ticks // 2] / 1e3, "p99_us": t[int(ticks * 0.99)] / 1e3}
    return out


GEMM_LOOP = """
import torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
while True:
    for _ in range(20):
        a = (a @ a).clamp_(-1, 1)
    torch.cuda.synchronize()
"""


def under_gemm(fn):  # type: ignore[no-untyped-def]
    # Its own process, as a training job beside the agent is: a thread would hold the GIL
    # the NVML calls give up.
    load = subprocess.Popen([sys.executable, "-c", GEMM_LOOP])
    time.sleep(8)  # past the CUDA context's creation
    try:
        return fn()
    finally:
        load.kill()
        load.wait()


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    N.nvmlInit()
    h = N.nvmlDeviceGetHandleByIndex(0)
    s1, s2 = N.nvmlGpmSampleAlloc(), N.nvmlGpmSampleAlloc()
    N.nvmlGpmSampleGet(h, s2)
    time.sleep(0.1)
    N.nvmlGpmSampleGet(h, s1)

    # The agent's metric computation from two snapshots: its request built once, the two
    # samples set per call (collectors/nvml_source/gpu.py, D70).
    mg = N.c_nvmlGpmMetricsGet_t()
    mg.version, mg.numMetrics = N.NVML_GPM_METRICS_GET_VERSION, len(GPM_METRICS)
    for i, name in enumerate(GPM_METRICS):
        mg.metrics[i].metricId = getattr(N, name)

    def gpm_metrics() -> None:
        mg.sample1, mg.sample2 = s2, s1
        N.nvmlGpmMetricsGet(mg)

    calls = {
        **agent_calls(N, h, s1),
        # variants the agent does not use: what each costs on its own
        "memory_v1": lambda: N.nvmlDeviceGetMemoryInfo(h),
        "field_power_instant": lambda: N.nvmlDeviceGetFieldValues(h, [N.NVML_FI_DEV_POWER_INSTANT]),
        "field_memory_temp": lambda: N.nvmlDeviceGetFieldValues(h, [N.NVML_FI_DEV_MEMORY_TEMP]),
        "gpm_metrics_get": gpm_metrics,
    }
    out: dict[str, object] = {name: timed(fn) for name, fn in calls.items()}
    for name, v in out.items():
        print(f"{name:24s} {v}", flush=True)
    src = PynvmlSource([0], warn=print)
    src.sample(0)
    prof = cProfile.Profile()
    costs = []
    for _ in range(50):
        time.sleep(0.1)
        t = time.perf_counter_ns()
        prof.enable()
        src.sample(0)
        prof.disable()
        costs.append(time.perf_counter_ns() - t)
    costs.sort()
    out["agent_sample"] = {"median_us": costs[25] / 1e3, "max_us": costs[-1] / 1e3}
    stats = pstats.Stats(prof)
    stats.sort_stats("tottime").print_stats(15)
    out["profile_tottime_us_per_sample"] = {
        f"{k[2]}": v[2] / 50 * 1e6 for k, v in stats.stats.items() if v[2] / 50 > 5e-6
    }
    out["cold"] = {"idle": cold(calls), "gemm_bf16": under_gemm(lambda: cold(calls))}
    print(json.dumps(out["cold"], indent=1), flush=True)
    (OUT / "call_cost.json").write_text(json.dumps(out, indent=1))
    print(json.dumps(out["agent_sample"]), flush=True)


if __name__ == "__main__":
    main()
