"""Timing without the profiler (CUDA events at the step boundaries) and profiling with the
dashboard's hook."""

from __future__ import annotations

import contextlib
import statistics
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from collectors.torch_profiler import profile_to_dashboard
from tools.validation.workload import Case, Ctx, Workload

WARMUP_STEPS = 5
TIMED_STEPS = 20
PROFILE_STEPS = 6  # 3 unprofiled (timed by the hook), 1 warmup, 2 recorded
SCHEDULE = {"wait": 3, "warmup": 1, "active": 2, "repeat": 1}
SESSION = "validation"  # fixed, so trace paths are OUT/traces/<id>/validation/cycle1/...


def sync(ctx: Ctx) -> None:
    if ctx.cuda:
        torch.cuda.synchronize()


class StepClock:
    """Boundary marks for `steps` steps: CUDA events on the current stream (no synchronize
    inside the loop), the host clock on CPU; a synchronize before the first step and after
    the last one gives the wall-clock mean."""

    def __init__(self, ctx: Ctx, steps: int) -> None:
        self.ctx, self.steps = ctx, steps
        self.marks: list[Any] = []
        self.wall_s = [0.0, 0.0]

    def __call__(self) -> None:
        if not self.marks:
            sync(self.ctx)
            self.wall_s[0] = time.perf_counter()
        if self.ctx.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            self.marks.append(event)
        else:
            self.marks.append(time.perf_counter_ns())
        if len(self.marks) == self.steps + 1:
            sync(self.ctx)
            self.wall_s[1] = time.perf_counter()

    def result(self) -> dict[str, Any]:
        if len(self.marks) != self.steps + 1:
            raise RuntimeError(f"{len(self.marks)} step boundaries for {self.steps} steps")
        pairs = zip(self.marks, self.marks[1:], strict=False)
        if self.ctx.cuda:
            ms = [float(a.elapsed_time(b)) for a, b in pairs]
        else:
            ms = [(b - a) / 1e6 for a, b in pairs]
        return {
            "median_ms": statistics.median(ms),
            "mean_ms": statistics.fmean(ms),
            "wall_mean_ms": (self.wall_s[1] - self.wall_s[0]) * 1e3 / self.steps,
            "per_step_ms": [round(t, 4) for t in ms],
            "steps": self.steps,
            "clock": "cuda_event" if self.ctx.cuda else "host",
        }


def time_unprofiled(ctx: Ctx, w: Workload) -> dict[str, Any]:
    clock = StepClock(ctx, TIMED_STEPS)
    w.run(TIMED_STEPS, clock)
    return clock.result()


def profile(ctx: Ctx, case: Case, w: Workload, out: Path) -> dict[str, Any]:
    """PROFILE_STEPS steps under the hook; the profile starts at the first step boundary, so a
    framework's setup before its first step is not part of the hook's first unprofiled step."""
    with contextlib.ExitStack() as stack:
        prof: Any = None

        def boundary() -> None:
            nonlocal prof
            if prof is None:
                prof = stack.enter_context(
                    profile_to_dashboard(
                        case.id,
                        ingest=False,
                        trace_dir=out / "traces",
                        session=SESSION,
                        schedule=torch.profiler.schedule(**SCHEDULE),
                        record_shapes=case.record_shapes,
                        profile_memory=case.profile_memory,
                        with_stack=case.with_stack,
                    )
                )
            else:
                prof.step()

        w.run(PROFILE_STEPS, boundary)
    h = prof.dashboard
    if h.errors:
        raise RuntimeError("; ".join(h.errors))
    (trace,) = h.trace_files
    (hook,) = h.unprofiled
    return {
        "trace": trace.relative_to(out.resolve()).as_posix(),
        "trace_bytes": trace.stat().st_size,
        "hook_unprofiled": None if hook is None else asdict(hook),
    }
