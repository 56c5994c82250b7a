"""The torch.profiler hook's unprofiled reference: the steps it does not record are timed and
their median written first in each cycle's trace, which the ingest keeps; a schedule without
wait steps is shifted; with ingest=False only the traces are written, with neither duckdb nor
msgspec imported (the hook's ingest: test_torch_profiler.py)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.paths import REPO
from helpers.raw_trace import raw_rank

torch = pytest.importorskip("torch")

from helpers.training import RUN, train  # noqa: E402

from collectors.ingest import ingest  # noqa: E402
from collectors.torch_profiler import UNPROFILED_KEY, profile_to_dashboard  # noqa: E402
from data.store import Store  # noqa: E402


def trace_doc(path: Path) -> dict[str, Any]:
    """A gzipped trace's top-level object, keys in file order."""
    doc = json.loads(gzip.decompress(path.read_bytes()))
    assert isinstance(doc, dict)
    return doc


def test_wait_steps_are_timed_into_the_trace_and_the_store(tmp_path: Path) -> None:
    """The three wait steps' median is in the trace's header, which the ingest keeps in
    ranks.trace_metadata."""
    with profile_to_dashboard(
        RUN,
        ingest=False,
        trace_dir=tmp_path / "traces",
        schedule=torch.profiler.schedule(wait=3, warmup=1, active=2, repeat=1),
    ) as prof:
        assert train(prof, 8) == 8
    h = prof.dashboard
    assert h.errors == []
    (unprofiled,) = h.unprofiled
    assert unprofiled is not None
    assert (unprofiled.count, unprofiled.clock) == (3, "host")  # steps 0-2; not 3-5
    assert unprofiled.median_ms > 0
    (trace,) = h.trace_files
    doc = trace_doc(trace)
    assert next(iter(doc)) == UNPROFILED_KEY  # first, so before traceEvents
    expected = {"median_ms": unprofiled.median_ms, "count": 3, "clock": "host"}
    assert doc[UNPROFILED_KEY] == expected
    assert raw_rank(trace).steps == {4, 5}  # the schedule as given: it has 3 wait steps

    data = tmp_path / "store"
    run_id = ingest([trace], data_dir=data)
    (row,) = Store(data).rows("SELECT trace_metadata FROM ranks WHERE run_id = ?", [run_id])
    assert json.loads(row["trace_metadata"])[UNPROFILED_KEY] == expected


def test_unprofiled_median_is_the_step_time(tmp_path: Path) -> None:
    """Steps that sleep 20 ms: the hook's median is the loop's own, timed at the same points
    (the hook marks a step's end as step() begins, so the loop reads its clock just before
    calling it: timed after step() returned, a step also held the profiler's own step work,
    which moved one median by 1.2 ms on a loaded VM)."""
    own_ms = []
    with profile_to_dashboard(
        RUN,
        ingest=False,
        trace_dir=tmp_path,
        schedule=torch.profiler.schedule(wait=3, warmup=1, active=2, repeat=1),
    ) as prof:
        t0 = time.perf_counter_ns()
        for _ in range(6):
            time.sleep(0.020)
            t = time.perf_counter_ns()
            own_ms.append((t - t0) / 1e6)
            t0 = t
            prof.step()
    (unprofiled,) = prof.dashboard.unprofiled
    assert unprofiled is not None
    assert 19.9 < unprofiled.median_ms < 25.0  # a sleep wakes late on a loaded VM, a little
    assert abs(unprofiled.median_ms - sorted(own_ms[:3])[1]) < 1.0


def test_schedule_without_wait_steps_is_shifted_by_three_unprofiled_steps(tmp_path: Path) -> None:
    with profile_to_dashboard(
        RUN,
        ingest=False,
        trace_dir=tmp_path,
        schedule=torch.profiler.schedule(wait=0, warmup=1, active=3, repeat=1),
    ) as prof:
        assert train(prof, 8) == 8
    h = prof.dashboard
    assert h.errors == []
    assert [u.count if u else 0 for u in h.unprofiled] == [3]
    (trace,) = h.trace_files
    assert raw_rank(trace).steps == {4, 5, 6}  # steps 0-2 unprofiled, 3 warmup, 4-6 active
    assert trace_doc(trace)[UNPROFILED_KEY]["count"] == 3


def test_a_long_wait_window_keeps_its_latest_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a schedule's last cycle every step waits: the timer keeps a bounded window."""
    monkeypatch.setattr("collectors.torch_profiler.dashboard_profile.MAX_TIMED_STEPS", 2)
    with profile_to_dashboard(
        RUN,
        ingest=False,
        trace_dir=tmp_path,
        schedule=torch.profiler.schedule(wait=5, warmup=1, active=1, repeat=1),
    ) as prof:
        assert train(prof, 8) == 8
    assert [u.count if u else 0 for u in prof.dashboard.unprofiled] == [2]


def test_whole_block_profiled_has_no_unprofiled_reference(tmp_path: Path) -> None:
    with profile_to_dashboard(RUN, ingest=False, trace_dir=tmp_path) as prof:
        assert train(prof, 3) == 3
    h = prof.dashboard
    assert (h.errors, h.unprofiled) == ([], [None])
    (trace,) = h.trace_files
    assert UNPROFILED_KEY not in trace_doc(trace)


def test_traces_only_without_duckdb_or_msgspec(tmp_path: Path) -> None:
    """ingest=False, as on a GPU machine that has torch but not the dashboard's dependencies:
    the store's modules are never imported, the traces land in trace_dir, no store is made."""
    script = f"""
import sys
for name in ("duckdb", "msgspec", "pyarrow"):
    sys.modules[name] = None  # any import of them raises ImportError
sys.path.insert(0, {str(REPO)!r})
import torch
from collectors.torch_profiler import profile_to_dashboard
model = torch.nn.Linear(64, 10)
with profile_to_dashboard(
    "no-store", ingest=False, trace_dir="traces",
    schedule=torch.profiler.schedule(wait=3, warmup=1, active=2, repeat=1),
) as prof:
    for _ in range(8):
        model(torch.randn(32, 64)).sum().backward()
        prof.step()
assert prof.dashboard.errors == [], prof.dashboard.errors
assert prof.dashboard.run_ids == []
assert "collectors.ingest" not in sys.modules and "data.store" not in sys.modules
print(*prof.dashboard.trace_files)
"""
    env = {k: v for k, v in os.environ.items() if k != "DASH_DATA"}
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (trace,) = (Path(f) for f in done.stdout.split())
    assert trace.is_relative_to(tmp_path / "traces")
    assert raw_rank(trace).steps == {4, 5}  # a readable trace of the active steps
    assert trace_doc(trace)[UNPROFILED_KEY]["count"] == 3
    assert [p.name for p in tmp_path.iterdir()] == ["traces"]  # no store folder anywhere
