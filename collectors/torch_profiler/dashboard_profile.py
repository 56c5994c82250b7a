"""DashboardProfile, a torch.profiler.profile that times its unprofiled steps, and
profile_to_dashboard, the context manager a training or inference script wraps its loop in."""

from __future__ import annotations

import contextlib
import os
import statistics
from collections import deque
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import torch
from torch.profiler import ProfilerAction, ProfilerActivity, profile

from collectors.torch_profiler.handler import DashboardTraceHandler, IngestIn
from collectors.torch_profiler.unprofiled import (
    Schedule,
    StepTimer,
    UnprofiledSteps,
    with_unprofiled_prefix,
)

if TYPE_CHECKING:
    from collectors.nvml_source import NvmlSource

# Steps kept per wait window: after a schedule's last cycle every step is a wait step, and a
# long run must not keep a CUDA event per step. The median is of the window's latest steps.
MAX_TIMED_STEPS = 1000


class _Sampler(Protocol):
    def start(self) -> None: ...
    def stop(self) -> None: ...


class DashboardProfile(profile):
    """A torch.profiler.profile whose `dashboard` handler sends each cycle to the store.

    It also times every step it does not record (action NONE), from the previous step
    boundary (`start()` is the first) to the `step()` that ends it, so each cycle's trace
    carries the unprofiled step time of the same workload (`unprofiled_steps()`; of the
    latest MAX_TIMED_STEPS steps of a longer wait window). A schedule
    whose first `unprofiled_steps` steps are not all NONE is shifted by that many steps.
    With `schedule=None` every step is recorded and nothing is timed.
    """

    def __init__(
        self,
        handler: DashboardTraceHandler,
        *,
        schedule: Schedule | None = None,
        unprofiled_steps: int = 3,
        **kwargs: Any,
    ) -> None:
        if unprofiled_steps < 0:
            raise ValueError(f"unprofiled_steps={unprofiled_steps!r}: need 0 or more")
        if schedule is not None:
            schedule = with_unprofiled_prefix(schedule, unprofiled_steps)
        super().__init__(on_trace_ready=handler, schedule=schedule, **kwargs)
        self.dashboard = handler
        self._timer = StepTimer()
        self._step_start: Any = None  # the mark that began the current step, if unprofiled
        # the current, else latest, wait window's (start, end) marks
        self._window: deque[tuple[Any, Any]] = deque(maxlen=MAX_TIMED_STEPS)

    def start(self) -> None:
        """Start profiling; the first step begins here."""
        super().start()
        if self.current_action == ProfilerAction.NONE:
            self._step_start = self._timer.mark()

    def step(self) -> None:
        """End the current step (timed if it ran unprofiled) and begin the next."""
        end = None
        if self._step_start is not None:
            end = self._timer.mark()
            self._window.append((self._step_start, end))
        super().step()  # may export a cycle, whose trace reads the window
        self._step_start = None
        if self.current_action == ProfilerAction.NONE:
            if end is None:  # the first step of a new wait window
                self._window.clear()
            # after super().step(): a cycle's export is no part of the next step
            self._step_start = end if end is not None else self._timer.mark()

    def unprofiled_steps(self) -> UnprofiledSteps | None:
        """The latest wait window's unprofiled steps; None if no step has run unprofiled."""
        if not self._window:
            return None
        ms = self._timer.elapsed_ms(self._window)
        return UnprofiledSteps(statistics.median(ms), len(ms), self._timer.clock)


def _start_nvml(
    handler: DashboardTraceHandler, data_dir: Path, interval_s: float, source: NvmlSource | None
) -> _Sampler | None:
    """One NVML sampler per host (local rank 0), its samples tagged with the run and session."""
    if int(os.environ.get("LOCAL_RANK", str(handler.rank))) != 0:
        return None
    try:
        from collectors.nvml import NvmlSampler  # the agent's sampler; imports pynvml

        sampler: _Sampler = NvmlSampler(
            data_dir,
            interval_s=interval_s,
            tags={"run": handler.run, "session": handler.session},
            source=source,
        )
        sampler.start()
    except Exception as e:  # NvmlUnavailableError, no driver, or no agent module yet
        handler.report(f"NVML sampling unavailable: {e}", kind="nvml")
        return None
    return sampler


@contextlib.contextmanager
def profile_to_dashboard(
    run: str,
    *,
    data_dir: Path | str | None = None,
    trace_dir: Path | str | None = None,
    tags: dict[str, Any] | None = None,
    tokens_per_step: int | None = None,
    schedule: Any = None,
    activities: Iterable[ProfilerActivity] | None = None,
    record_shapes: bool = True,
    nvml: bool = False,
    nvml_interval_s: float = 1.0,
    nvml_source: NvmlSource | None = None,
    ingest_in: IngestIn = "process",
    ingest: bool = True,
    unprofiled_steps: int = 3,
    rank_wait_s: float = 300.0,
    session: str | None = None,
    **profile_kwargs: Any,
) -> Iterator[DashboardProfile]:
    """Profile the block with torch.profiler and ingest every cycle into the store.

    Args:
        run: run name shown in the dashboard (every cycle is a run of this name).
        data_dir: the store folder (default: $DASH_DATA, else the dashboard's data/local).
        trace_dir: where trace files are kept (default `<data_dir>/traces`).
        tags: user metadata, added to the run's tags (values become strings).
        tokens_per_step: tokens processed per step, for tokens/s.
        schedule: a `torch.profiler.schedule(...)`; None profiles the whole block as one cycle
            (and then no step runs unprofiled: the traces carry no unprofiled reference).
        activities: default CPU, plus CUDA when a GPU is present.
        record_shapes: on by default: the roofline needs operator input shapes.
        nvml: also sample NVML on this host for the profiled window (collectors.nvml).
        nvml_interval_s: NVML sampling interval.
        nvml_source: samples from elsewhere than this host's GPUs (a ReplaySource recording).
        ingest_in: "process" (default, measured in BENCHMARKS.md) or "thread".
        ingest: False keeps the trace files only (in trace_dir): no store, no ingest, and
            neither duckdb nor msgspec is imported (pass trace_dir or data_dir: the default
            store folder is data.store's).
        unprofiled_steps: at least this many steps run unprofiled and are timed before the
            first cycle; the schedule is shifted by this many steps when it has fewer.
        rank_wait_s: how long rank 0 waits for the other ranks' traces of a cycle.
        session: id shared by the ranks (default: broadcast from rank 0, or torchrun's).
        **profile_kwargs: passed on to torch.profiler.profile (profile_memory, with_stack…).

    Yields the profile; call `prof.step()` once per step. On exit it waits for the ingests;
    `prof.dashboard` then holds run ids, trace files, hold-up times, the unprofiled
    references and errors.
    """
    if nvml and not ingest:
        raise ValueError("nvml=True writes its samples to the store: it needs ingest=True")
    handler = DashboardTraceHandler(
        run,
        data_dir=data_dir,
        trace_dir=trace_dir,
        tags=tags,
        tokens_per_step=tokens_per_step,
        ingest_in=ingest_in,
        ingest=ingest,
        rank_wait_s=rank_wait_s,
        session=session,
    )
    if activities is None:
        activities = [ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(ProfilerActivity.CUDA)
    store = handler.data_dir  # None only without ingest, which nvml was refused above
    sampler = _start_nvml(handler, store, nvml_interval_s, nvml_source) if nvml and store else None
    prof = DashboardProfile(
        handler,
        activities=list(activities),
        schedule=schedule,
        unprofiled_steps=unprofiled_steps,
        record_shapes=record_shapes,
        **profile_kwargs,
    )
    try:
        with prof:
            yield prof
    finally:
        if sampler is not None:
            try:
                sampler.stop()
            except Exception as e:
                handler.report(f"NVML sampling failed: {e}", kind="nvml")
        handler.close()
