"""The real agent's per-GPU tick cost, idle and beside a training-like GEMM (run on the device).

Starts `python -m collectors.nvml --interval 0.1` as its own process, lets it run idle, then
starts a bf16 GEMM loop in another process (a job beside the agent, its CUDA context created
before the phase starts so the driver's start-up is not in it), then idle again. Every tick's
`sample_cost_ns` (what the agent spent reading one GPU) is read back from the store and split
by phase. Writes OUT/agent_tick.json: per phase, ticks, median, p99, max (µs), ticks over 1 ms and
when they came (seconds into the phase), every sample's on-CPU time beside its wall time
(`cpu_per_sample`), and how many of those overlapped one of the agent's
garbage collections or followed one of its segment writes (both logged around the unchanged
agent: OUT/agent_events.json), and what each sample over 1 ms spent in which NVML read, on CPU or
waiting (`slow_samples`).
ROUNDS repeats the GEMM phase and the idle after it, each time in a new process.

AGENT_FIFO=P runs the agent under the real-time FIFO scheduler at priority P (root only): a
tick that still waits then waits on the driver, not for a CPU.

`outside_cuda_lifecycle` gives the same figures without the ticks that fell while a GEMM process
started CUDA (spawn until its context was ready) or tore it down (its loop's end until it
exited), each window padded by half a second (`cuda_lifecycle_s`).

Usage: [AGENT_CPU=N] [AGENT_FIFO=P] python tools/nvml_agent_tick.py OUT [IDLE_S] [GEMM_S] [ROUNDS]
"""

from __future__ import annotations

import json
import os
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
ROUNDS = int(sys.argv[4]) if len(sys.argv) > 4 else 1
PIN = os.environ.get("AGENT_CPU")  # run the agent on this one CPU only (the GEMM anywhere)
FIFO = os.environ.get("AGENT_FIFO")  # real-time priority for the agent (1-99)
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
# The agent as `python -m collectors.nvml` runs it, with every garbage collection (start in
# wall ns, length in ns, generation), every segment write (start, length) and every sample
# over 1 ms (start, wall ns, the thread's CPU ns, and each NVML read's name, wall and CPU ns)
# written to argv[1] at exit. Timing each read adds two clock reads a call to every sample.
AGENT = """
import atexit, gc, json, sys, time
import collectors.nvml as agent
log, start = {"gc": [], "flush": []}, {}
def note(phase, info):
    if phase == "start":
        start["t"], start["w"] = time.perf_counter_ns(), time.time_ns()
    else:
        log["gc"].append((start["w"], time.perf_counter_ns() - start["t"], info["generation"]))
gc.callbacks.append(note)
flush = agent.NvmlSampler.flush
def timed_flush(self):
    w, t = time.time_ns(), time.perf_counter_ns()
    flush(self)
    log["flush"].append((w, time.perf_counter_ns() - t))
agent.NvmlSampler.flush = timed_flush
from collectors.nvml_source.gpu import PynvmlSource
log["slow"], log["cpu"], calls = [], [], []
read, sample = PynvmlSource.read, PynvmlSource.sample
def timed_read(self, g, cols, fn):
    t, c = time.perf_counter_ns(), time.thread_time_ns()
    try:
        return read(self, g, cols, fn)
    finally:
        calls.append((cols[0], time.perf_counter_ns() - t, time.thread_time_ns() - c))
def timed_sample(self, gpu):
    calls.clear()
    w, t, c = time.time_ns(), time.perf_counter_ns(), time.thread_time_ns()
    row = sample(self, gpu)
    d, cpu = time.perf_counter_ns() - t, time.thread_time_ns() - c
    log["cpu"].append((w, d, cpu))
    if d > 1_000_000:
        log["slow"].append((w, d, cpu, list(calls)))
    return row
PynvmlSource.read, PynvmlSource.sample = timed_read, timed_sample
out = sys.argv.pop(1)
atexit.register(lambda: open(out, "w").write(json.dumps(log)))
sys.exit(agent.main(sys.argv[1:]))
"""
AFTER_FLUSH_NS = 120_000_000  # a tick starting this soon after a segment write ended
LIFECYCLE_PAD_NS = 500_000_000  # the driver's work after a start-up or exit the tool saw end


def p99(ordered: list[int]) -> int:
    """The 99th percentile of a sorted, non-empty list (its largest at fewer than 100)."""
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def stats(
    ticks: list[tuple[int, int]], start_ns: int, events: dict[str, list]
) -> dict[str, object]:
    """ticks: (ts_ns, cost_ns); the slow ones are given as seconds after `start_ns`."""
    c = sorted(cost for _, cost in ticks)
    n = len(c)
    slow = [(t, x) for t, x in ticks if x > 1_000_000]
    gcs = events["gc"]
    ends = [w + d for w, d in events["flush"]]

    def after_flush(t: int) -> bool:
        return any(0 <= t - e < AFTER_FLUSH_NS for e in ends)

    return {
        "ticks": n,
        "median_us": c[n // 2] / 1e3,
        "p99_us": p99(c) / 1e3,
        "max_us": c[-1] / 1e3,
        "over_1ms": sum(x > 1_000_000 for x in c),
        "over_1ms_at_s": [round((t - start_ns) / 1e9, 2) for t, _ in slow],
        "over_1ms_with_gc": sum(any(g < t + x and t < g + d for g, d, _ in gcs) for t, x in slow),
        "gc_in_phase": sum(start_ns <= g <= ticks[-1][0] for g, _, _ in gcs) if ticks else 0,
        "after_flush": sum(after_flush(t) for t, _ in ticks),
        "over_1ms_after_flush": sum(after_flush(t) for t, _ in slow),
    }


def _agent_scheduling() -> None:
    """In the agent's child before exec: AGENT_CPU's pinning and AGENT_FIFO's priority."""
    if PIN:
        os.sched_setaffinity(0, {int(PIN)})
    if FIFO:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(int(FIFO)))


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    log = (OUT / "agent_tick.log").open("w")
    event_log = OUT / "agent_events.json"
    agent = subprocess.Popen(
        [sys.executable, "-c", AGENT, str(event_log), "--interval", "0.1", "--data", str(STORE),
         "--host", "h200"],
        stderr=log,
        preexec_fn=_agent_scheduling if PIN or FIFO else None,
    )  # fmt: skip
    marks, lifecycle = [], []  # lifecycle: the GEMM processes' CUDA start-up and exit windows
    for r in range(ROUNDS):
        spawned = time.time_ns()
        gemm = subprocess.Popen(
            [sys.executable, "-c", GEMM, str(GEMM_S)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert gemm.stdout is not None
        assert gemm.stdin is not None
        assert gemm.stdout.readline().strip() == "ready"
        lifecycle.append((spawned, time.time_ns() + LIFECYCLE_PAD_NS))
        time.sleep(3.0)  # agent start-up (GPM's first pair) and the GEMM's context creation
        if r == 0:
            t0 = time.time_ns()
            time.sleep(IDLE_S)
            marks.append(("idle", t0, time.time_ns()))
        t0 = time.time_ns()
        gemm.stdin.write("go\n")
        gemm.stdin.flush()
        gemm.wait()
        exited = time.time_ns()
        lifecycle.append((t0 + int(GEMM_S * 1e9), exited + LIFECYCLE_PAD_NS))
        marks.append((f"gemm_{r}", t0, exited))
        t0 = time.time_ns()
        time.sleep(IDLE_S / 2)
        marks.append((f"idle_after_{r}", t0, time.time_ns()))
    agent.send_signal(signal.SIGTERM)
    agent.wait(timeout=30)
    files = sorted((STORE / "lake" / "gpu_samples" / "host=h200").glob("*.parquet"))
    samples = pa.concat_tables(pq.ParquetFile(f).read() for f in files)
    ts, cost = samples["ts_ns"].to_pylist(), samples["sample_cost_ns"].to_pylist()
    ticks = [(t, c) for t, c in zip(ts, cost, strict=True) if t is not None and c is not None]
    events = json.loads(event_log.read_text())
    out: dict[str, object] = {
        name: stats([(t, c) for t, c in ticks if start <= t < end], start, events)
        for name, start, end in marks
    }
    first, last = marks[0][1], marks[-1][2]
    out["all_phases"] = stats([(t, c) for t, c in ticks if first <= t < last], first, events)
    # Another process starting CUDA (spawn to its context ready) or tearing it down (its
    # loop's end to its exit), each padded by LIFECYCLE_PAD_NS: the ticks outside those
    # windows are the agent's own cost on a GPU whose users do not come and go.
    outside = [
        (t, c) for t, c in ticks
        if first <= t < last and not any(a <= t < b for a, b in lifecycle)
    ]  # fmt: skip
    out["outside_cuda_lifecycle"] = stats(outside, first, events)
    out["cuda_lifecycle_s"] = [[round((a - first) / 1e9, 2), round((b - first) / 1e9, 2)]
                               for a, b in lifecycle]  # fmt: skip
    out["gc_ms_by_generation"] = {
        str(gen): sorted(round(d / 1e6, 3) for _, d, g in events["gc"] if g == gen)[-5:]
        for gen in (0, 1, 2)
    }

    def slowest(read: list) -> int:
        return -read[1]

    # Each slow sample: when (s after the first phase began), its wall and on-CPU µs, and its
    # three slowest reads as (name, wall µs, CPU µs). Wall far above CPU: the thread waited
    # (descheduled, or blocked in the driver), it did not compute.
    out["slow_samples"] = [
        {"at_s": round((w - first) / 1e9, 2), "wall_us": d // 1000, "cpu_us": c // 1000,
         "slowest_reads": [(n, x // 1000, y // 1000) for n, x, y in sorted(r, key=slowest)[:3]]}
        for w, d, c, r in events["slow"]
    ]  # fmt: skip

    # Every sample's wall and on-CPU time (the thread's): a tick whose wall is far above its
    # CPU waited in the driver or for a CPU; its CPU is what it took from the job beside it.
    def cpu_stats(rows: list) -> dict[str, float]:
        cpu, wall = sorted(c for _, _, c in rows), sorted(d for _, d, _ in rows)
        n = len(cpu)
        return {"samples": n, "cpu_median_us": cpu[n // 2] / 1e3,
                "cpu_p99_us": p99(cpu) / 1e3, "cpu_max_us": cpu[-1] / 1e3,
                "cpu_over_1ms": sum(c > 1_000_000 for c in cpu),
                "wall_p99_us": p99(wall) / 1e3} if n else {}  # fmt: skip

    timed = [(w, d, c) for w, d, c in events["cpu"] if first <= w < last]
    out["cpu_per_sample"] = {
        "all_phases": cpu_stats(timed),
        "outside_cuda_lifecycle": cpu_stats(
            [x for x in timed if not any(a <= x[0] < b for a, b in lifecycle)]
        ),
    }
    writes = sorted(d for _, d in events["flush"])
    out["segment_write_ms"] = {"n": len(writes), "median": writes[len(writes) // 2] / 1e6,
                               "max": writes[-1] / 1e6} if writes else {}  # fmt: skip
    (OUT / "agent_tick.json").write_text(json.dumps(out, indent=1))
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
