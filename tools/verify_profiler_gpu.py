"""Verify collectors.torch_profiler on real GPUs (run on the device machine, from the repo root).

Usage: PYTHONPATH=. python tools/verify_profiler_gpu.py OUT_DIR [STORE_DIR]

1. One GPU: a small bf16 MLP trains 24 steps under profile_to_dashboard with the schedule
   wait=1 warmup=1 active=2 repeat=2, once with the ingest in a child process and once in a
   thread; every step is timed (synchronized), so the summary shows the step hold-up.
2. With 2+ GPUs: 2-rank DDP over NCCL, one process a GPU, into one run of 2 ranks.
Writes OUT_DIR/summary.json (runs, ranks, kernels, hold-ups) and copies the trace files
(small: they become test fixtures) into OUT_DIR, flat.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from collectors.torch_profiler import profile_to_dashboard
from data.store import Store

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "verify_out")
STORE = Path(sys.argv[2] if len(sys.argv) > 2 else "/tmp/verify_store")
STEPS = 24
SCHEDULE = {"wait": 1, "warmup": 1, "active": 2, "repeat": 2}
TOKENS = 64 * 128


def mlp() -> nn.Module:
    torch.manual_seed(0)
    d = 1024
    return nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d), nn.LayerNorm(d))


def train(model: nn.Module, device: torch.device, prof: Any, steps: int) -> list[dict[str, float]]:
    """Timed steps: each synchronizes, so a step's time is what the loop really waits."""
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    x = torch.randn(64, 128, 1024, device=device)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.mse_loss(model(x).float(), x)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        if prof is not None:
            prof.step()
        t2 = time.perf_counter()
        times.append({"t0": t0, "work_s": t1 - t0, "prof_step_s": t2 - t1, "end": t2})
    return times


def summarize_steps(
    times: list[dict[str, float]], spans: list[tuple[float, float]]
) -> dict[str, Any]:
    """Median step time with and without a background ingest in flight, and the worst steps."""
    busy = [t for t in times if any(a < t["end"] and t["t0"] < b for a, b in spans)]
    idle = [t for t in times[3:] if t not in busy]

    def med(rows: list[dict[str, float]], key: str) -> float | None:
        return round(statistics.median(r[key] for r in rows) * 1e3, 3) if rows else None

    return {
        "steps": len(times),
        "median_work_ms_idle": med(idle, "work_s"),
        "median_work_ms_during_ingest": med(busy, "work_s"),
        "steps_during_ingest": len(busy),
        "prof_step_ms": [round(t["prof_step_s"] * 1e3, 3) for t in times],
    }


def single(ingest_in: str) -> dict[str, Any]:
    device = torch.device("cuda", 0)
    model = mlp().to(device)
    train(model, device, None, 5)  # warm up cuBLAS and the allocator
    base = train(model, device, None, STEPS)
    with profile_to_dashboard(
        f"verify-1gpu-{ingest_in}",
        data_dir=STORE,
        schedule=torch.profiler.schedule(**SCHEDULE),
        tokens_per_step=TOKENS,
        tags={"tool": "verify_profiler_gpu"},
        nvml=True,
        ingest_in=ingest_in,  # type: ignore[arg-type]
    ) as prof:
        times = train(model, device, prof, STEPS)
        loop_end = time.perf_counter()
    h = prof.dashboard
    return {
        "ingest_in": ingest_in,
        "baseline_median_work_ms": round(statistics.median(t["work_s"] for t in base) * 1e3, 3),
        "holdup_ms": [round(s * 1e3, 3) for s in h.holdup_s],
        "background_s": [round(b - a, 3) for a, b in h.background_s],
        "wait_after_loop_s": round(time.perf_counter() - loop_end, 3),
        "run_ids": h.run_ids,
        "trace_files": [str(f) for f in h.trace_files],
        "errors": h.errors,
        **summarize_steps(times, h.background_s),
    }


def ddp_rank(rank: int, world: int, result_dir: str) -> None:
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29541")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world)
    device = torch.device("cuda", rank)
    model = nn.parallel.DistributedDataParallel(mlp().to(device), device_ids=[rank])
    train(model, device, None, 3)
    with profile_to_dashboard(
        "verify-ddp",
        data_dir=STORE,
        schedule=torch.profiler.schedule(wait=1, warmup=1, active=2, repeat=1),
        tokens_per_step=TOKENS * world,
    ) as prof:
        times = train(model, device, prof, 8)
    h = prof.dashboard
    out = {
        "rank": rank,
        "run_ids": h.run_ids,
        "trace_files": [str(f) for f in h.trace_files],
        "holdup_ms": [round(s * 1e3, 3) for s in h.holdup_s],
        "errors": h.errors,
        **summarize_steps(times, h.background_s),
    }
    Path(result_dir, f"ddp_rank{rank}.json").write_text(json.dumps(out))
    dist.destroy_process_group()


def store_summary() -> list[dict[str, Any]]:
    store = Store(STORE)
    runs = store.rows(
        "SELECT run_id, name, rank_count, device_name, kernel_count, tags FROM runs "
        "ORDER BY ingested_at_ns"
    )
    for r in runs:
        r["kernels_per_rank"] = {
            row["rank"]: row["n"]
            for row in store.rows(
                "SELECT rank, count(*) AS n FROM gpu_events WHERE run_id = ? AND kind = 'kernel' "
                "GROUP BY rank ORDER BY rank",
                [r["run_id"]],
            )
        }
        r["steps"] = [
            row["step"]
            for row in store.rows(
                "SELECT DISTINCT step FROM steps WHERE run_id = ? ORDER BY step", [r["run_id"]]
            )
        ]
        r["cpu_ops_with_shapes"] = store.rows(
            "SELECT count(*) AS n FROM cpu_ops WHERE run_id = ? AND input_dims IS NOT NULL",
            [r["run_id"]],
        )[0]["n"]
    return runs


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(STORE, ignore_errors=True)
    gpus = torch.cuda.device_count()
    summary: dict[str, Any] = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device": torch.cuda.get_device_name(0),
        "gpus": gpus,
        "single": [single("process"), single("thread")],
    }
    if gpus >= 2:
        import torch.multiprocessing as mp

        mp.spawn(ddp_rank, args=(2, str(OUT)), nprocs=2)
        summary["ddp"] = [json.loads((OUT / f"ddp_rank{r}.json").read_text()) for r in (0, 1)]
        for r in (0, 1):
            (OUT / f"ddp_rank{r}.json").unlink()
    summary["runs"] = store_summary()
    copied = []
    for f in sorted((STORE / "traces").rglob("rank*.pt.trace.json.gz")):
        run, _session, cycle = f.parts[-4:-1]
        if f.stat().st_size < 600_000 and (run != "verify-1gpu-thread"):
            dest = OUT / f"{run}_{cycle}_{f.name}"
            shutil.copy(f, dest)
            copied.append({"file": dest.name, "bytes": f.stat().st_size})
    summary["copied"] = copied
    (OUT / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    print(json.dumps(summary, indent=1, default=str))


if __name__ == "__main__":
    main()
