"""Record the NVML agent on a real GPU through a phased workload (run on the device machine).

Starts `python -m collectors.nvml --interval 0.1` as its own process, runs the phases below
on GPU 0 with PyTorch, marks each phase's Unix-ns bounds, stops the agent with SIGTERM and
exports what it wrote: OUT/nvml_phases_h200.csv (our gpu_samples columns + `phase`),
OUT/nvml_phases_h200.inventory.json, and OUT/cost.json (per-GPU per-tick sampling cost).

Usage: python tools/nvml_phases.py OUT_DIR
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import torch

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "phases_out")
STORE = Path("/tmp/nvml_phases_store")  # not under OUT: only flat files come back
PHASE_S = 3.0
DEV = "cuda:0"


def until(deadline: float, step, sync: bool) -> int:
    # Sync each step (except the launch-bound phase): a deep launch queue of 25 ms kernels
    # would run on for seconds past the phase's end.
    n = 0
    while time.monotonic() < deadline:
        step()
        if sync:
            torch.cuda.synchronize()
        n += 1
    torch.cuda.synchronize()
    return n


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    log = (OUT / "agent.log").open("w")
    agent = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "collectors.nvml",
            "--interval",
            "0.1",
            "--data",
            str(STORE),
            "--host",
            "h200",
            "--tag",
            "workload=nvml_phases",
        ],
        stderr=log,
    )
    a = torch.randn(8192, 8192, device=DEV, dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device=DEV, dtype=torch.bfloat16)
    src = torch.empty(2 << 30, dtype=torch.uint8, device=DEV)
    dst = torch.empty_like(src)
    host = torch.empty(1 << 30, dtype=torch.uint8, pin_memory=True)
    dev1g = torch.empty(1 << 30, dtype=torch.uint8, device=DEV)
    one = torch.zeros(1, device=DEV)
    torch.cuda.synchronize()
    time.sleep(2.0)  # agent start-up (NVML init, inventory, first GPM snapshot)
    phases = {
        "idle": lambda: time.sleep(0.05),
        "gemm_bf16": lambda: torch.mm(a, b),
        "hbm_copy": lambda: dst.copy_(src),
        "tiny_kernels": lambda: one.add_(1.0),
        "h2d_pinned": lambda: dev1g.copy_(host, non_blocking=True),
        "one_block_spin": lambda: torch.cuda._sleep(50_000_000),
    }
    marks = []
    for name, step in phases.items():
        t0 = time.time_ns()
        n = until(time.monotonic() + PHASE_S, step, sync=name != "tiny_kernels")
        marks.append({"phase": name, "start_ns": t0, "end_ns": time.time_ns(), "iterations": n})
        print(name, n, flush=True)
    t0 = time.time_ns()
    time.sleep(1.5)
    marks.append({"phase": "idle_end", "start_ns": t0, "end_ns": time.time_ns(), "iterations": 0})
    agent.send_signal(signal.SIGTERM)
    print("agent exit", agent.wait(timeout=30), flush=True)
    export(marks)
    in_process()


def in_process() -> None:
    """The library entry point (what a torch.profiler hook uses): start(), stop()."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from collectors.nvml import NvmlSampler

    s = NvmlSampler(Path("/tmp/nvml_inproc"), interval_s=0.1, tags={"via": "library"})
    s.start()
    time.sleep(1.5)
    s.stop()
    print("in-process sampler wrote", s.samples_written, "samples", flush=True)


def export(marks: list[dict]) -> None:
    def table(name: str) -> pa.Table:
        files = sorted((STORE / "lake" / name / "host=h200").glob("*.parquet"))
        return pa.concat_tables(pq.ParquetFile(f).read() for f in files)

    samples = table("gpu_samples").sort_by([("gpu", "ascending"), ("ts_ns", "ascending")])
    ts = samples["ts_ns"].to_pylist()
    phase = []
    for t in ts:
        hit = [m["phase"] for m in marks if m["start_ns"] <= t < m["end_ns"]]
        phase.append(hit[0] if hit else "")
    samples = samples.drop(["source", "agent_id"]).append_column("phase", pa.array(phase))
    pacsv.write_csv(samples, OUT / "nvml_phases_h200.csv")
    inv = table("gpu_inventory").drop(["source", "agent_id", "ts_ns", "tags"]).to_pylist()
    (OUT / "nvml_phases_h200.inventory.json").write_text(json.dumps(inv, indent=1))
    cost = sorted(samples["sample_cost_ns"].to_pylist())
    n = len(cost)
    stats = {
        "samples": n,
        "median_us": cost[n // 2] / 1e3,
        "p99_us": cost[min(n - 1, int(n * 0.99))] / 1e3,
        "max_us": cost[-1] / 1e3,
        "mean_us": sum(cost) / n / 1e3,
        "phases": marks,
        "torch": torch.__version__,
        "gpus": torch.cuda.device_count(),
    }
    (OUT / "cost.json").write_text(json.dumps(stats, indent=1))
    print(json.dumps({k: v for k, v in stats.items() if k != "phases"}), flush=True)


if __name__ == "__main__":
    main()
