"""torch.profiler straight into the dashboard: two lines in a training or inference script.

    from collectors.torch_profiler import profile_to_dashboard
    with profile_to_dashboard(run="gpt2-bf16", schedule=...) as prof:
        for batch in loader:
            train_step(batch)
            prof.step()

Each profiling cycle of the schedule becomes one run named `run`, tagged `cycle=<k>` and
`session=<id>` (docs/decisions.md D7 says why a cycle is a run). On the training thread the
handler only exports the cycle's trace (3 ms for a 20 KB trace on an H200 host; BENCHMARKS.md);
gzip, the wait for the other ranks and the ingest run on a background thread, the ingest
itself in a child process (`python -m collectors.ingest`, the CLI's code path), so the
training loop keeps its GIL and its memory.

Every rank writes `<trace_dir>/<run>/<session>/cycle<k>/rank<N>.pt.trace.json.gz`; rank 0
waits for all ranks' files of a cycle (a file rendezvous: no collective inside the training
loop) and ingests the folder as one run with one rank per file. The trace files are kept.
Any failure (export, store, ingest) is reported once as a warning; training goes on.

The profiler's own overhead (record_shapes, profile_memory: steps 1.2-2.1x slower) is no
saving to recommend, so `DashboardProfile` also times the steps it does not record (the
schedule's wait steps, at least `unprofiled_steps` of them before the first cycle) and each
cycle's trace carries their median under the top-level key "dashboardUnprofiledSteps"
(docs/decisions.md D7). With `ingest=False` only the trace files are written, and neither
duckdb nor msgspec needs to be installed.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import logging
import os
import queue
import secrets
import shutil
import statistics
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

import torch
import torch.distributed as dist
from torch.profiler import ProfilerAction, ProfilerActivity, profile

from data.cli_child import ingest_child
from data.errors import DashError

if TYPE_CHECKING:
    from collectors.nvml_source import NvmlSource

log = logging.getLogger(__name__)

IngestIn = Literal["process", "thread"]
StepClock = Literal["cuda_event", "host"]
Schedule = Callable[[int], ProfilerAction]
UNPROFILED_KEY = "dashboardUnprofiledSteps"  # top-level trace key, before traceEvents
# Steps kept per wait window: after a schedule's last cycle every step is a wait step, and a
# long run must not keep a CUDA event per step. The median is of the window's latest steps.
MAX_TIMED_STEPS = 1000
_PROJECT_ROOT = Path(__file__).resolve().parents[1]


class _Sampler(Protocol):
    def start(self) -> None: ...
    def stop(self) -> None: ...


@dataclass(frozen=True, slots=True)
class UnprofiledSteps:
    """The steps of one wait window that ran without the profiler recording them."""

    median_ms: float
    count: int
    clock: StepClock  # CUDA events on the current stream, or the host's perf_counter


@dataclass(frozen=True, slots=True)
class _Job:
    cycle: int
    raw: Path  # the plain JSON export, gzipped into `final` off the training thread
    final: Path
    unprofiled: UnprofiledSteps | None  # written into the trace as UNPROFILED_KEY


def default_data_dir() -> Path:
    """The store the dashboard reads by default: $DASH_DATA, else data/local beside app.py."""
    if env := os.environ.get("DASH_DATA"):
        return Path(env)
    from data.store import DEFAULT_DATA_DIR  # imports duckdb: only when the default is needed

    return _PROJECT_ROOT / DEFAULT_DATA_DIR


def _store_and_traces(
    data_dir: Path | str | None, trace_dir: Path | str | None, ingest: bool
) -> tuple[Path | None, Path]:
    """The store folder (None without ingest) and the root folder of the trace files.

    The default store comes from data.store, which needs duckdb: it is looked up only when
    the store, or the traces folder inside it, is used.
    """
    if not ingest and trace_dir is not None:
        return None, Path(trace_dir).resolve()
    store = Path(data_dir or default_data_dir()).resolve()
    traces = Path(trace_dir).resolve() if trace_dir is not None else store / "traces"
    return (store if ingest else None), traces


def _rank_and_world() -> tuple[int, int]:
    """This process's rank and the world size: torch.distributed's, else torchrun's env."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))


def _shared_session(rank: int, world: int) -> str:
    """One id for this profiling session, the same on every rank.

    With a process group rank 0's id is broadcast (once, on entry, where every rank is);
    without one, ranks started by torchrun share TORCHELASTIC_RUN_ID.
    """
    own = f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
    if world > 1 and dist.is_available() and dist.is_initialized():
        box: list[Any] = [own if rank == 0 else None]
        dist.broadcast_object_list(box, src=0)
        return str(box[0])
    elastic = os.environ.get("TORCHELASTIC_RUN_ID")
    return elastic if world > 1 and elastic and elastic != "none" else own


def _git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return (out.stdout.strip() or None) if out.returncode == 0 else None


def run_metadata(
    world_size: int, tokens_per_step: int | None, tags: dict[str, Any] | None
) -> dict[str, str]:
    """The run tags: versions, git commit, world size, tokens per step, then the user's tags.

    Values are strings, as the ingest CLI's `--tag KEY=VALUE` writes them, so that a run's
    tags read the same whichever way it was ingested.
    """
    meta: dict[str, Any] = {
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "git_commit": _git_commit(),
        "world_size": world_size,
        "tokens_per_step": tokens_per_step,
        **(tags or {}),
    }
    return {k: str(v) for k, v in meta.items() if v is not None}


class DashboardTraceHandler:
    """An `on_trace_ready` handler that sends every profiling cycle to the dashboard's store.

    Usable on its own: `torch.profiler.profile(..., on_trace_ready=DashboardTraceHandler(
    "run"))`; call `close()` after the profile ends. After `close()`: `run_ids` (rank 0),
    `trace_files` (this rank's), `holdup_s` (time each call held the training thread),
    `background_s` ((start, end) perf_counter span of each cycle's background work),
    `unprofiled` (each cycle's unprofiled reference; None under a plain profile, which times
    no steps), `errors` (only the first of each kind, trace or NVML, was logged).
    With `ingest=False` the trace files are kept and nothing is written to a store.
    """

    def __init__(
        self,
        run: str,
        *,
        data_dir: Path | str | None = None,
        trace_dir: Path | str | None = None,
        tags: dict[str, Any] | None = None,
        tokens_per_step: int | None = None,
        ingest_in: IngestIn = "process",
        ingest: bool = True,
        rank_wait_s: float = 300.0,
        session: str | None = None,
    ) -> None:
        self.run = run
        self.data_dir, root = _store_and_traces(data_dir, trace_dir, ingest)
        self.rank, self.world_size = _rank_and_world()
        self.session = session or _shared_session(self.rank, self.world_size)
        safe_run = "".join(c if c.isalnum() or c in "-_." else "_" for c in run) or "run"
        self.folder = root / safe_run / self.session
        self.tags = {
            **run_metadata(self.world_size, tokens_per_step, tags),
            "session": self.session,
        }
        self.ingest_in = ingest_in
        self.rank_wait_s = rank_wait_s
        self.run_ids: list[str] = []
        self.trace_files: list[Path] = []
        self.holdup_s: list[float] = []
        self.background_s: list[tuple[float, float]] = []
        self.unprofiled: list[UnprofiledSteps | None] = []
        self.errors: list[str] = []
        self._reported: set[str] = set()
        self._cycle = 0
        self._jobs: queue.Queue[_Job | None] = queue.Queue()
        self._worker = threading.Thread(target=self._work, name="dashboard-ingest", daemon=True)
        self._worker.start()

    def __call__(self, prof: profile) -> None:
        """Export this cycle's trace (on the training thread) and queue the rest."""
        t0 = time.perf_counter()
        self._cycle += 1
        cycle_dir = self.folder / f"cycle{self._cycle}"
        final = cycle_dir / f"rank{self.rank}.pt.trace.json.gz"
        raw = cycle_dir / f".rank{self.rank}.pt.trace.json"  # hidden: not yet a rank file
        unprofiled = None
        try:
            unprofiled = prof.unprofiled_steps() if isinstance(prof, DashboardProfile) else None
        except Exception as e:  # the trace is still worth having without its reference
            self.report(f"cycle {self._cycle}: timing the unprofiled steps failed: {e}")
        self.unprofiled.append(unprofiled)
        try:
            cycle_dir.mkdir(parents=True, exist_ok=True)
            prof.export_chrome_trace(str(raw))
            self._jobs.put(_Job(self._cycle, raw, final, unprofiled))
        except Exception as e:  # training goes on whatever the export hit
            self.report(f"cycle {self._cycle}: export to {raw} failed: {e}")
        self.holdup_s.append(time.perf_counter() - t0)

    def report(self, message: str, *, kind: str = "trace") -> None:
        """Record a failure; the first of each kind is logged (one line), the rest only kept."""
        self.errors.append(message)
        if kind not in self._reported:
            self._reported.add(kind)
            log.warning(
                "dashboard profiler (%s): %s; training goes on, traces stay in %s",
                self.run,
                message,
                self.folder,
            )

    def close(self, timeout_s: float | None = None) -> None:
        """Wait for the queued cycles to be written and ingested."""
        self._jobs.put(None)
        self._worker.join(timeout_s)

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            t0 = time.perf_counter()
            try:
                self._finish(job)
            except Exception as e:  # a bug or a full disk must not end the worker
                self.report(f"cycle {job.cycle}: {type(e).__name__}: {e}")
            self.background_s.append((t0, time.perf_counter()))

    def _finish(self, job: _Job) -> None:
        tmp = job.final.with_name(f".{job.final.name}.tmp")
        with job.raw.open("rb") as src, gzip.open(tmp, "wb", compresslevel=6) as dst:
            if job.unprofiled is not None:
                head = src.read(64).lstrip()  # torch 2.13 writes " {"
                if not head.startswith(b"{"):
                    raise ValueError(f"{job.raw}: the profiler's export does not start with '{{'")
                dst.write(_opening_with(UNPROFILED_KEY, asdict(job.unprofiled)) + head[1:])
            shutil.copyfileobj(src, dst, 1 << 20)
        os.replace(tmp, job.final)  # a rank file appears complete or not at all
        job.raw.unlink()
        self.trace_files.append(job.final)
        if self.rank != 0 or self.data_dir is None:
            return
        files = self._wait_for_ranks(job.final.parent)
        if len(files) < self.world_size:
            self.report(
                f"cycle {job.cycle}: {len(files)} of {self.world_size} ranks wrote a trace "
                f"within {self.rank_wait_s:.0f} s; ingesting those"
            )
        tags = {**self.tags, "cycle": str(job.cycle)}
        run_id = self._ingest(job.final.parent, self.data_dir, tags)
        if run_id:
            self.run_ids.append(run_id)

    def _wait_for_ranks(self, cycle_dir: Path) -> list[Path]:
        deadline = time.monotonic() + self.rank_wait_s
        while True:
            files = sorted(cycle_dir.glob("rank*.pt.trace.json.gz"))
            if len(files) >= self.world_size or time.monotonic() > deadline:
                return files
            time.sleep(0.2)

    def _ingest(self, cycle_dir: Path, data_dir: Path, tags: dict[str, str]) -> str | None:
        if self.ingest_in == "thread":
            from collectors.ingest import ingest  # duckdb and msgspec: only where a run is stored

            try:
                return ingest([cycle_dir], data_dir=data_dir, name=self.run, tags=tags)
            except Exception as e:
                self.report(f"ingest of {cycle_dir} failed: {e}")
                return None
        # A child process: the parse holds a GIL and memory that the training loop needs.
        try:
            return ingest_child([cycle_dir], data_dir=data_dir, name=self.run, tags=tags).run_id
        except DashError as e:
            self.report(f"ingest of {cycle_dir} failed: {e}")
            return None


def _opening_with(key: str, value: Any) -> bytes:
    """`{"key": value,`: the opening of a JSON object whose first key is `key`.

    The trace's own keys follow, so the key comes before traceEvents, where the ingest keeps
    every top-level key in the rank's trace_metadata (collectors/parse/document.py, _header).
    """
    return b"{" + json.dumps({key: value})[1:-1].encode() + b","


def _with_unprofiled_prefix(schedule: Schedule, steps: int) -> Schedule:
    """The schedule itself if its first `steps` steps are all NONE, else shifted by `steps`."""
    if all(schedule(i) == ProfilerAction.NONE for i in range(steps)):
        return schedule
    return lambda step: ProfilerAction.NONE if step < steps else schedule(step - steps)


class _StepTimer:
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
            schedule = _with_unprofiled_prefix(schedule, unprofiled_steps)
        super().__init__(on_trace_ready=handler, schedule=schedule, **kwargs)
        self.dashboard = handler
        self._timer = _StepTimer()
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
