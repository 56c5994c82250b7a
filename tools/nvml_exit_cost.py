"""What makes the agent's ticks slow after another GPU process exits (run on the device).

The agent's p99 holds 1 ms alone and beside a GEMM job, and misses it in the seconds after
that job's process has exited (docs/decisions.md D56, D66). This times, on GPU 0 every
100 ms with the agent's own wait (sleep, then poll the last WAKE_SPIN_S), each NVML call the
agent makes, and beside them two controls: a fixed pure-Python loop (the vCPU's own speed:
if it slows with the NVML calls, the VM is the cause) and the host's steal time from
/proc/stat. Phases, repeated ROUNDS times: a GEMM process running, then the ticks after it
was killed (AFTER_S seconds). Writes OUT/exit_cost.json: every tick (seconds since the exit,
per-call µs, control µs, steal jiffies) and per phase the median/p99 per call.

Usage: python tools/nvml_exit_cost.py OUT_DIR [ROUNDS] [AFTER_S]
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pynvml as N

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from collectors.nvml import WAKE_SPIN_S
from tools.nvml_calls import agent_calls

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "exit_cost_out")
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
AFTER_S = float(sys.argv[3]) if len(sys.argv) > 3 else 15.0
GEMM = """
import sys, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
torch.mm(a, a); torch.cuda.synchronize()
print("ready", flush=True)
while True:
    for _ in range(20):
        a = (a @ a).clamp_(-1, 1)
    torch.cuda.synchronize()
"""


def steal_jiffies() -> int:
    with open("/proc/stat") as f:
        return int(f.readline().split()[8])


def control() -> None:
    """A fixed CPU workload, ~100 µs on an idle vCPU."""
    s = 0
    for i in range(4000):
        s += i


def ticks(calls: dict, seconds: float, t_ref: float) -> list[dict[str, float]]:
    out = []
    due = time.monotonic()
    for _ in range(int(seconds / 0.1)):
        due += 0.1
        time.sleep(max(due - time.monotonic() - WAKE_SPIN_S, 0.0))
        while time.monotonic() < due:
            pass
        row: dict[str, float] = {"at_s": round(time.monotonic() - t_ref, 3)}
        st = steal_jiffies()
        t0 = time.perf_counter_ns()
        for name, fn in calls.items():
            s = time.perf_counter_ns()
            fn()
            row[name] = (time.perf_counter_ns() - s) / 1e3
        row["tick"] = (time.perf_counter_ns() - t0) / 1e3
        s = time.perf_counter_ns()
        control()
        row["control"] = (time.perf_counter_ns() - s) / 1e3
        row["steal_jiffies"] = steal_jiffies() - st
        out.append(row)
    return out


def summary(rows: list[dict[str, float]]) -> dict[str, dict[str, float]]:
    out = {}
    for key in rows[0]:
        if key == "at_s":
            continue
        v = sorted(r[key] for r in rows)
        out[key] = {"median": v[len(v) // 2], "p99": v[min(len(v) - 1, int(len(v) * 0.99))],
                    "max": v[-1]}  # fmt: skip
    return out


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    N.nvmlInit()
    h = N.nvmlDeviceGetHandleByIndex(0)
    s1, s2 = N.nvmlGpmSampleAlloc(), N.nvmlGpmSampleAlloc()
    calls = agent_calls(N, h, s1)
    N.nvmlGpmSampleGet(h, s2)
    result: dict[str, object] = {"idle_before": ticks(calls, 10.0, time.monotonic())}
    for r in range(ROUNDS):
        job = subprocess.Popen([sys.executable, "-c", GEMM], stdout=subprocess.PIPE, text=True)
        assert job.stdout is not None
        assert job.stdout.readline().strip() == "ready"
        time.sleep(2.0)
        result[f"gemm_{r}"] = ticks(calls, 8.0, time.monotonic())
        job.kill()
        t_exit = time.monotonic()
        job.wait()
        result[f"exit_wait_{r}_s"] = time.monotonic() - t_exit
        result[f"after_{r}"] = ticks(calls, AFTER_S, t_exit)
    phases = {k: v for k, v in result.items() if isinstance(v, list)}
    result["summary"] = {k: summary(v) for k, v in phases.items()}
    after = [row for k, v in phases.items() if k.startswith("after") for row in v]
    result["summary"]["after_all"] = summary(after)
    result["summary"]["gemm_all"] = summary(
        [row for k, v in phases.items() if k.startswith("gemm") for row in v]
    )
    result["slow_after"] = [row for row in after if row["tick"] > 1000]
    (OUT / "exit_cost.json").write_text(json.dumps(result, indent=1))
    print(json.dumps({k: result["summary"][k] for k in ("idle_before", "gemm_all", "after_all")},
                     indent=1))  # fmt: skip
    for row in result["slow_after"]:
        skip = ("at_s", "tick", "steal_jiffies")
        top = sorted(((v, k) for k, v in row.items() if k not in skip), reverse=True)
        print(
            row["at_s"],
            round(row["tick"]),
            [(k, round(v)) for v, k in top[:3]],
            "steal",
            row["steal_jiffies"],
        )


if __name__ == "__main__":
    main()
