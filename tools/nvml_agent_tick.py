"""The real agent's per-GPU tick cost, idle and beside a training-like GEMM (run on the device).

Starts `python -m collectors.nvml --interval 0.1` as its own process, lets it run idle, then
starts a bf16 GEMM loop in another process (a job beside the agent, its CUDA context created
before the phase starts so the driver's start-up is not in it), then idle again. Every tick's
`sample_cost_ns` (what the agent spent reading one GPU) is read back from the store and split
by phase. Writes OUT/agent_tick.json: per phase, ticks, median, p99, max (µs), ticks over 1 ms and
when they came (seconds into the phase).

Usage: python tools/nvml_agent_tick.py OUT_DIR [IDLE_S] [GEMM_S]
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "agent_tick_out")
IDLE_S = float(sys.argv[2]) if len(sys.argv) > 2 else 40.0
GEMM_S = float(sys.argv[3]) if len(sys.argv) > 3 else 40.0
STORE = Path("/tmp/nvml_agent_tick_store")  # not under OUT: only flat files come back
GEMM = """
import sys, time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
torch.mm(a, b); torch.cuda.synchronize()
print("ready", flush=True)
sys.stdin.readline()  # the phase starts
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    torch.mm(a, b); torch.cuda.synchronize()
"""


def stats(ticks: list[tuple[int, int]], start_ns: int) -> dict[str, object]:
    """ticks: (ts_ns, cost_ns); the slow ones are given as seconds after `start_ns`."""
    c = sorted(cost for _, cost in ticks)
    n = len(c)
    return {
        "ticks": n,
        "median_us": c[n // 2] / 1e3,
        "p99_us": c[min(n - 1, int(n * 0.99))] / 1e3,
        "max_us": c[-1] / 1e3,
        "over_1ms": sum(x > 1_000_000 for x in c),
        "over_1ms_at_s": [round((t - start_ns) / 1e9, 2) for t, x in ticks if x > 1_000_000],
    }


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    log = (OUT / "agent_tick.log").open("w")
    agent = subprocess.Popen(
        [sys.executable, "-m", "collectors.nvml", "--interval", "0.1", "--data", str(STORE),
         "--host", "h200"],
        stderr=log,
    )  # fmt: skip
    gemm = subprocess.Popen(
        [sys.executable, "-c", GEMM, str(GEMM_S)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert gemm.stdout is not None
    assert gemm.stdin is not None
    assert gemm.stdout.readline().strip() == "ready"
    time.sleep(3.0)  # agent start-up (GPM's first pair) and the GEMM's context creation
    marks = []
    t0 = time.time_ns()
    time.sleep(IDLE_S)
    marks.append(("idle", t0, time.time_ns()))
    t0 = time.time_ns()
    gemm.stdin.write("go\n")
    gemm.stdin.flush()
    gemm.wait()
    marks.append(("gemm", t0, time.time_ns()))
    t0 = time.time_ns()
    time.sleep(IDLE_S / 2)
    marks.append(("idle_after", t0, time.time_ns()))
    agent.send_signal(signal.SIGTERM)
    agent.wait(timeout=30)
    files = sorted((STORE / "lake" / "gpu_samples" / "host=h200").glob("*.parquet"))
    samples = pa.concat_tables(pq.ParquetFile(f).read() for f in files)
    ts, cost = samples["ts_ns"].to_pylist(), samples["sample_cost_ns"].to_pylist()
    ticks = [(t, c) for t, c in zip(ts, cost, strict=True) if t is not None and c is not None]
    out = {
        name: stats([(t, c) for t, c in ticks if start <= t < end], start)
        for name, start, end in marks
    }
    first, last = marks[0][1], marks[-1][2]
    out["all_phases"] = stats([(t, c) for t, c in ticks if first <= t < last], first)
    (OUT / "agent_tick.json").write_text(json.dumps(out, indent=1))
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
