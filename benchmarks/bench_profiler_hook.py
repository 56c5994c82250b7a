"""How long does the torch.profiler hook hold a training step up? Thread vs child process.

A CPU training loop (torch on one thread, as a GPU job's Python thread is one) runs 60 timed
steps under torch.profiler with the schedule wait=5 warmup=1 active=3 repeat=3, once per
handler: none (profiler without on_trace_ready), torch's tensorboard_trace_handler (gzip),
profile_to_dashboard with the ingest in a thread, and in a child process. Reported per
handler: time inside on_trace_ready (the training thread's hold-up), prof.step() on the steps
that end a cycle, and the median time of the unprofiled steps that ran while a background
ingest was in flight, against the same run's first steps (nothing in flight). Three rounds,
handlers in rotating order; the table gives medians.

Usage: python benchmarks/bench_profiler_hook.py [--steps 60] [--layers 24] [--rounds 3]
Results: benchmarks/out/profiler_hook.json and a Markdown table on stdout.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from collectors.torch_profiler import profile_to_dashboard

OUT = Path(__file__).resolve().parent / "out" / "profiler_hook.json"


class Timer:
    """Times on_trace_ready calls made through it."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.holdup_s = inner, []

    def __call__(self, prof: Any) -> None:
        t0 = time.perf_counter()
        if self.inner is not None:
            self.inner(prof)
        self.holdup_s.append(time.perf_counter() - t0)


def model_and_batch(layers: int) -> tuple[Any, Any, Any]:
    torch.manual_seed(0)
    mods: list[Any] = []
    for _ in range(layers):
        mods += [torch.nn.Linear(256, 256), torch.nn.GELU(), torch.nn.LayerNorm(256)]
    return torch.nn.Sequential(*mods), torch.randn(64, 256), torch.randn(64, 256)


def timed_loop(prof: Any, steps: int, layers: int) -> list[dict[str, float]]:
    model, x, y = model_and_batch(layers)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=False)
    out = []
    for _ in range(steps):
        t0 = time.perf_counter()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        opt.zero_grad()
        t1 = time.perf_counter()
        prof.step()
        out.append({"t0": t0, "work_s": t1 - t0, "step_s": time.perf_counter() - t1})
    return out


def schedule() -> Any:
    return torch.profiler.schedule(wait=5, warmup=1, active=3, repeat=3)


def measure(mode: str, steps: int, layers: int, tmp: Path) -> dict[str, Any]:
    spans: list[tuple[float, float]] = []
    if mode in ("process", "thread"):
        with profile_to_dashboard(
            f"bench-{mode}", data_dir=tmp / mode, schedule=schedule(), ingest_in=mode
        ) as prof:
            times = timed_loop(prof, steps, layers)
        holdup = prof.dashboard.holdup_s
        spans = prof.dashboard.background_s
        errors = prof.dashboard.errors
        trace_bytes = sum(f.stat().st_size for f in prof.dashboard.trace_files)
    else:
        inner = (
            torch.profiler.tensorboard_trace_handler(str(tmp / mode), use_gzip=True)
            if mode == "tensorboard"
            else None
        )
        timer = Timer(inner)
        with torch.profiler.profile(
            schedule=schedule(), record_shapes=True, on_trace_ready=timer
        ) as prof:
            times = timed_loop(prof, steps, layers)
        holdup, errors = timer.holdup_s, []
        trace_bytes = sum(f.stat().st_size for f in (tmp / mode).glob("*")) if inner else 0
    cycle_end = [t["step_s"] for i, t in enumerate(times) if (i + 1) % 9 == 0 and i < 27]
    # Steps nobody profiles (warm-up and active steps carry the profiler's own overhead).
    # The reference is this run's own first wait steps, before any cycle ended: on a shared
    # machine the load drifts less within a run than between runs.
    unprofiled = [t for i, t in enumerate(times) if i >= 10 and (i % 9 < 5 or i >= 27)]
    busy = [
        t for t in unprofiled if any(a <= t["t0"] + t["work_s"] and t["t0"] <= b for a, b in spans)
    ]
    ref = statistics.median(t["work_s"] for t in times[1:5])
    during = statistics.median(t["work_s"] for t in busy) if busy else None
    return {
        "mode": mode,
        "holdup_ms": [round(h * 1e3, 2) for h in holdup],
        "cycle_end_prof_step_ms": [round(s * 1e3, 2) for s in cycle_end],
        "background_s": [round(b - a, 2) for a, b in spans],
        "steps_during_ingest": len(busy),
        "ref_step_ms": round(ref * 1e3, 2),
        "step_ms_median_during_ingest": round(during * 1e3, 2) if during else None,
        "slowdown_during_ingest": round(during / ref, 2) if during else None,
        "trace_gz_bytes_total": trace_bytes,
        "errors": errors,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--rounds", type=int, default=3, help="each round runs every handler")
    args = ap.parse_args()
    torch.set_num_threads(1)
    modes = ["none", "tensorboard", "thread", "process"]
    results: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
    with tempfile.TemporaryDirectory(prefix="bench-hook-") as tmp:
        timed_loop(torch.profiler.profile(), 5, args.layers)  # warm-up: first ops are slow
        for k in range(args.rounds):
            for mode in modes[k % 4 :] + modes[: k % 4]:  # rotate the order: fairer to drift
                r = measure(mode, args.steps, args.layers, Path(tmp) / f"r{k}")
                results[mode].append(r)
                print(json.dumps(r), file=sys.stderr, flush=True)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"torch": torch.__version__, "args": vars(args), "results": results}))

    def med(rows: list[dict[str, Any]], key: str) -> str:
        vals = [v for r in rows for v in (r[key] if isinstance(r[key], list) else [r[key]])]
        vals = [v for v in vals if v is not None]
        return f"{statistics.median(vals):.2f}" if vals else "-"

    print(f"Medians over {args.rounds} rounds ({args.steps} steps, {args.layers} layers).\n")
    print("| handler | on_trace_ready hold-up, ms | prof.step() at cycle end, ms | "
          "own reference step, ms | step during ingest, ms | slowdown during ingest | "
          "background per cycle, s |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for mode, rows in results.items():
        print(
            f"| {mode} | {med(rows, 'holdup_ms')} | {med(rows, 'cycle_end_prof_step_ms')} | "
            f"{med(rows, 'ref_step_ms')} | {med(rows, 'step_ms_median_during_ingest')} | "
            f"{med(rows, 'slowdown_during_ingest')} | {med(rows, 'background_s')} |"
        )


if __name__ == "__main__":
    main()
