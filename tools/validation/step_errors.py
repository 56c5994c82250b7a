"""The unprofiled step of every validation run three ways: the recorder's median of 20 steps
(measured), the hook's median of its unprofiled steps, and the profiler-overhead model's (no
hook, no tag), per half of the overhead model's (tools/validation/halves.OVERHEAD_HALVES).
Used by benchmarks/bench_validation.py, tools/fit_step_model.py and
tools/step_model_alternatives.py.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from analysis.facts import Facts
from analysis.step_model import HOOK_KEY, HOST_BOUND_SHARE, StepModel, hook_ms, step_model
from tools.validation.evaluate import unprofiled_ms
from tools.validation.halves import OVERHEAD_HALVES


@dataclass(frozen=True)
class StepError:
    """One run's unprofiled step three ways: the recorder's median of 20 steps (measured),
    the hook's median of its unprofiled steps, and the profiler-overhead model's."""

    workload: str
    half: str
    host_bound: bool  # GPU time under HOST_BOUND_SHARE of the step, no sync in it
    measured_ms: float
    hook_ms: float | None
    modelled_ms: float
    model: StepModel  # the modelled one (no hook, no tag)

    @property
    def profiler_bound(self) -> bool:
        """Host-bound with under a millisecond of blocked copies or allocator calls a step:
        the profiled host time less the measured step is then what the profiler cost."""
        waits_ms = sum(self.model.waits_ms.values())
        return self.host_bound and waits_ms < 1.0 and self.model.cpu_ops > 0

    @property
    def profiler_ms(self) -> float:
        """The profiled host time less the unprofiled step: on a host-bound run (where that
        step is the host's own time) what the profiler cost."""
        return self.model.host_profiled_ms - self.measured_ms


def _without_hook(metadata: str | None) -> str | None:
    if not metadata:
        return metadata
    d = json.loads(metadata)
    d.pop(HOOK_KEY, None)
    return json.dumps(d)


def step_errors(facts_of: Callable[[str], Facts], workloads: dict[str, Any]) -> list[StepError]:
    """Every run with steps: measured, hook and modelled unprofiled step."""
    out = []
    for key, w in sorted(workloads.items()):
        if w.get("status") != "ok":
            continue
        f = facts_of(key)
        h = f.host
        meta = h.trace_metadata
        bare = meta.assign(trace_metadata=meta["trace_metadata"].map(_without_hook))
        model = step_model(f.steps, f.events, h.step_host, bare, {})
        if model is None:
            continue
        measured = unprofiled_ms(w)
        out.append(
            StepError(
                workload=key,
                half=OVERHEAD_HALVES.get(w["pair"], "unassigned"),
                host_bound=model.gpu_ms < HOST_BOUND_SHARE * measured
                and not h.step_host["syncs"].any(),
                measured_ms=measured,
                hook_ms=hook_ms(meta),
                modelled_ms=model.unprofiled_ms,
                model=model,
            )
        )
    return out


def profiler_cost_per_op_ns(errors: Iterable[StepError]) -> list[float]:
    """Per host-bound run with recorded ops, what the profiler cost per op."""
    return [
        e.profiler_ms * 1e6 / e.model.cpu_ops for e in errors if e.host_bound and e.model.cpu_ops
    ]


def profiler_cost_fit(errors: Iterable[StepError]) -> tuple[float, float]:
    """The profiler's cost per recorded op or runtime call as a multiple of the run's median
    recorded aten::empty duration, fitted over the profiler-bound runs that recorded one by
    least squares on the cost relative to each run's step (the model is judged by its relative
    error; an absolute fit lets the longest steps decide); and the fallback cost per event
    (ns), that multiple of those runs' median aten::empty duration."""
    bound = [e for e in errors if e.profiler_bound and not np.isnan(e.model.empty_ns)]
    step = np.array([e.measured_ms for e in bound])
    empty_ms = np.array([e.model.empty_ns for e in bound]) / 1e6
    x = empty_ms * [e.model.cpu_ops + e.model.runtime_calls for e in bound] / step
    y = np.array([e.profiler_ms for e in bound]) / step
    multiple = float(x @ y / (x @ x))
    return multiple, multiple * float(np.median(empty_ms)) * 1e6


def step_error_summary(errors: list[StepError]) -> str:
    """Per half: the modelled and the hook's unprofiled step against the measured one."""

    def pct(a: float, b: float) -> float:
        return abs(100 * (a - b) / b)

    lines = []
    for half in ("tune", "held-out"):
        e = [x for x in errors if x.half == half]
        if not e:
            continue
        model = [pct(x.modelled_ms, x.measured_ms) for x in e]
        hb = [pct(x.modelled_ms, x.measured_ms) for x in e if x.host_bound]
        hook = [pct(x.hook_ms, x.measured_ms) for x in e if x.hook_ms is not None]
        lines.append(
            f"unprofiled step, {half}: {len(e)} runs; overhead model median |error| "
            f"{statistics.median(model):.1f} %"
            f" (within 30 %: {sum(m <= 30 for m in model)}/{len(model)}; host-bound runs "
            f"{statistics.median(hb) if hb else float('nan'):.1f} % over {len(hb)}); hook "
            f"median |error| {statistics.median(hook):.1f} % (within 10 %: "
            f"{sum(h <= 10 for h in hook)}/{len(hook)})"
        )
    return "\n".join(lines)
