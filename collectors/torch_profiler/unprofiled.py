"""The steps the profiler does not record, timed: the reference a trace carries.

The profiler's own overhead (record_shapes, profile_memory: steps 1.2-2.1x slower) is no
saving to recommend, so DashboardProfile also times the steps it does not record (the
schedule's wait steps, at least `unprofiled_steps` of them before the first cycle) and each
cycle's trace carries their median under the top-level key UNPROFILED_KEY (docs/decisions.md
D7).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

import torch
from torch.profiler import ProfilerAction

StepClock = Literal["cuda_event", "host"]
Schedule = Callable[[int], ProfilerAction]
UNPROFILED_KEY = "dashboardUnprofiledSteps"  # top-level trace key, before traceEvents


@dataclass(frozen=True, slots=True)
class UnprofiledSteps:
    """The steps of one wait window that ran without the profiler recording them."""

    median_ms: float
    count: int
    clock: StepClock  # CUDA events on the current stream, or the host's perf_counter


@runtime_checkable
class TimesUnprofiledSteps(Protocol):
    """A profile that times the steps it does not record (DashboardProfile)."""

    def unprofiled_steps(self) -> UnprofiledSteps | None: ...


def with_unprofiled_prefix(schedule: Schedule, steps: int) -> Schedule:
    """The schedule itself if its first `steps` steps are all NONE, else shifted by `steps`."""
    if all(schedule(i) == ProfilerAction.NONE for i in range(steps)):
        return schedule
    return lambda step: ProfilerAction.NONE if step < steps else schedule(step - steps)


class StepTimer:
    """Step-boundary marks: CUDA events recorded on the current stream, else host ns.

    An event records without waiting for the GPU, so the loop keeps its own pace (a
    synchronize at each boundary would change a loop that has none). Elapsed times are read
    only when a cycle is exported, long after its wait window ended.
    """

    def __init__(self) -> None:
        self.clock: StepClock = "cuda_event" if torch.cuda.is_available() else "host"

    def mark(self) -> Any:
        """A boundary: a recorded torch.cuda.Event, or perf_counter_ns."""
        if self.clock == "host":
            return time.perf_counter_ns()
        event = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
        event.record()
        return event

    def elapsed_ms(self, spans: Sequence[tuple[Any, Any]]) -> list[float]:
        """Milliseconds of each (start, end) span of marks."""
        if self.clock == "host":
            return [(end - start) / 1e6 for start, end in spans]
        spans[-1][1].synchronize()
        return [float(start.elapsed_time(end)) for start, end in spans]
