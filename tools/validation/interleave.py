"""A pair recorded in one process with its two runs' unprofiled timing interleaved.

Recorded one after the other, the same before workload measured 36.85 and 46.31 ms minutes
apart (D66): the host's speed drifts more between runs than many fixes save. Here both runs
of a pair are built side by side and timed in ROUNDS alternating rounds (before first in even
rounds, after first in odd ones), so that a drift falls on both; the measured saving is the
median of the rounds' paired differences (tools/validation/evaluate.py). Each run is still
profiled alone: the before run before the after run is built, the after run once the before
run is freed, so neither trace holds the other's memory.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from tools.validation.runner import STAGES, base_record, clean_up, error_line, free_memory
from tools.validation.timing import (
    TIMED_STEPS,
    WARMUP_STEPS,
    StepClock,
    profile,
    sync,
)
from tools.validation.workload import Case, Ctx, Workload

ROUNDS = 4  # 4 x 22 steps beside warm-up and profile fit the decode pairs' static KV cache
ROUND_WARMUP_STEPS = 2  # after the other run: its allocations and caches are back in use


@dataclass(frozen=True)
class Globals:
    """The process-wide settings a workload's build may set (train() sets TF32 per
    precision, through the flags: reading the newer precision API beside them raises), put
    back before each of its rounds, since the other run's build changed them."""

    matmul_tf32: bool
    cudnn_tf32: bool
    cudnn_benchmark: bool

    @classmethod
    def now(cls) -> Globals:
        b = torch.backends
        return cls(
            b.cuda.matmul.allow_tf32,
            b.cudnn.allow_tf32,
            b.cudnn.benchmark,
        )

    def apply(self) -> None:
        torch.backends.cuda.matmul.allow_tf32 = self.matmul_tf32
        torch.backends.cudnn.allow_tf32 = self.cudnn_tf32
        torch.backends.cudnn.benchmark = self.cudnn_benchmark


class _Run:
    """One side of the pair: its case, record, and once built its workload and settings."""

    def __init__(self, case: Case) -> None:
        self.case, self.record = case, base_record(case)
        self.record["interleaved"] = {"rounds": ROUNDS, "round_warmup_steps": ROUND_WARMUP_STEPS}
        self.rounds: list[dict[str, Any]] = []
        self.w: Workload | None = None
        self.globals: Globals | None = None

    def build(self, ctx: Ctx) -> None:
        torch.manual_seed(0)
        self.w = self.case.build(ctx)
        self.globals = Globals.now()
        self.record.update(
            units_per_step=self.w.units_per_step, unit=self.w.unit, notes=self.w.notes
        )

    def workload(self) -> Workload:
        if self.w is None or self.globals is None:
            raise RuntimeError(f"{self.case.id}: not built, or freed")
        self.globals.apply()
        return self.w

    def timed_round(self, ctx: Ctx) -> None:
        w = self.workload()
        w.run(ROUND_WARMUP_STEPS, lambda: None)
        clock = StepClock(ctx, TIMED_STEPS)
        w.run(TIMED_STEPS, clock)
        self.rounds.append(clock.result())

    def profiled(self, ctx: Ctx, out: Path) -> None:
        self.record.update(profile(ctx, self.case, self.workload(), out))
        if ctx.cuda:
            self.record["peak_memory_bytes"] = torch.cuda.max_memory_allocated()

    def finish(self) -> None:
        """The rounds into the record: `median_ms` is the median of the rounds' medians
        (what evaluate.unprofiled_ms reads), `rounds_ms` each round's median in order."""
        if len(self.rounds) == ROUNDS:
            medians = [r["median_ms"] for r in self.rounds]
            self.record["unprofiled"] = {
                "median_ms": statistics.median(medians),
                "mean_ms": statistics.fmean(r["mean_ms"] for r in self.rounds),
                "wall_mean_ms": statistics.fmean(r["wall_mean_ms"] for r in self.rounds),
                "rounds_ms": medians,
                "per_step_ms": [t for r in self.rounds for t in r["per_step_ms"]],
                "steps": TIMED_STEPS * ROUNDS,
                "clock": self.rounds[0]["clock"],
            }
        self.record["seconds"]["total"] = round(sum(self.record["seconds"].values()), 2)
        self.record["status"] = "error" if self.record["errors"] else "ok"


def measure_pair(ctx: Ctx, before: Case, after: Case, out: Path) -> list[dict[str, Any]]:
    """Both runs' records. Whatever a stage raises is recorded in both (the pair is one
    measurement) with the stage it broke in, and the next pair runs."""
    b, a = _Run(before), _Run(after)
    stage, t0 = STAGES[0], time.perf_counter()

    def step(name: str, run: _Run, fn: Callable[[], None]) -> None:
        nonlocal stage, t0
        stage = name
        fn()
        sync(ctx)
        seconds = run.record["seconds"]
        seconds[name] = round(seconds.get(name, 0.0) + time.perf_counter() - t0, 2)
        t0 = time.perf_counter()

    try:
        step("build", b, lambda: b.build(ctx))
        step("warmup", b, lambda: b.workload().run(WARMUP_STEPS, lambda: None))
        step("profile", b, lambda: b.profiled(ctx, out))
        step("build", a, lambda: a.build(ctx))
        step("warmup", a, lambda: a.workload().run(WARMUP_STEPS, lambda: None))
        for i in range(ROUNDS):
            for run in (b, a) if i % 2 == 0 else (a, b):
                step("timed", run, lambda run=run: run.timed_round(ctx))
        b.w = None
        free_memory(ctx)  # the after run is profiled alone (clean_up would drop its compiled code)
        step("profile", a, lambda: a.profiled(ctx, out))
    except Exception as e:
        line = error_line(stage, e)
        for run in (b, a):
            run.record["errors"].append(line)
    b.w = a.w = None
    try:
        clean_up(ctx)
    except Exception as e:  # a broken CUDA context: the next pairs will say so too
        for run in (b, a):
            run.record["errors"].append(error_line("clean-up", e))
    for run in (b, a):
        run.finish()
    return [b.record, a.record]
