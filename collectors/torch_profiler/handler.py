"""The on_trace_ready handler: each profiling cycle's trace, written and ingested off the
training thread.

On the training thread the handler only exports the cycle's trace (3 ms for a 20 KB trace on
an H200 host; BENCHMARKS.md); gzip, the wait for the other ranks and the ingest run on a
background thread, the ingest itself in a child process (`python -m collectors.ingest`, the
CLI's code path), so the training loop keeps its GIL and its memory.

Every rank writes `<trace_dir>/<run>/<session>/cycle<k>/rank<N>.pt.trace.json.gz`; rank 0
waits for all ranks' files of a cycle (a file rendezvous: no collective inside the training
loop) and ingests the folder as one run with one rank per file. The trace files are kept.
Any failure (export, store, ingest) is reported once as a warning; training goes on.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import queue
import shutil
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from torch.profiler import profile

from collectors.torch_profiler.session import (
    rank_and_world,
    run_metadata,
    shared_session,
    store_and_traces,
)
from collectors.torch_profiler.unprofiled import (
    UNPROFILED_KEY,
    TimesUnprofiledSteps,
    UnprofiledSteps,
)
from data.cli_child import ingest_child
from data.errors import DashError

log = logging.getLogger("collectors.torch_profiler")  # the package's name: one for users

IngestIn = Literal["process", "thread"]


@dataclass(frozen=True, slots=True)
class _Job:
    cycle: int
    raw: Path  # the plain JSON export, gzipped into `final` off the training thread
    final: Path
    unprofiled: UnprofiledSteps | None  # written into the trace as UNPROFILED_KEY


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
        self.data_dir, root = store_and_traces(data_dir, trace_dir, ingest)
        self.rank, self.world_size = rank_and_world()
        self.session = session or shared_session(self.rank, self.world_size)
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
            unprofiled = prof.unprofiled_steps() if isinstance(prof, TimesUnprofiledSteps) else None
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
