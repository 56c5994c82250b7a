"""Shared test helpers: where the real traces are, and an independent raw-JSON counter.

The raw counter reads a trace with the standard library only (gzip + json, numbers as
decimal.Decimal), so what it finds owes nothing to the product's parser (msgspec + Arrow).
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures"
SAMPLES = REPO / "data" / "samples"
HAVE_FIXTURES = FIXTURES.is_dir()

requires_fixtures = pytest.mark.skipif(
    not HAVE_FIXTURES, reason=f"shared fixtures not present at {FIXTURES}"
)

# A folder that holds one multi-rank run (everything else in the fixtures is one file = one run).
MULTI_RANK_FOLDERS = ("foreign/hta/trace_filter",)

KERNEL_CATS = ("kernel", "Kernel")
MEMCPY_CATS = ("gpu_memcpy", "Memcpy")
MEMSET_CATS = ("gpu_memset", "Memset")
# Host-side API calls that can launch GPU work (cuda_sync events launch nothing).
LAUNCH_CATS = ("cuda_runtime", "Runtime", "cuda_driver")
# CPU-side categories in which Kineto writes its ProfilerStep#N ranges.
CPU_STEP_CATS = ("user_annotation", "cpu_op", "Operator")
CPU_OP_CATS = ("cpu_op", "Operator")
_STEP_NAME = re.compile(r"^ProfilerStep#(\d+)$")
_RANK_IN_NAME = re.compile(r"rank[-_]?(\d+)", re.IGNORECASE)


# ------------------------------------------------------------------------- the real traces


@dataclass(frozen=True)
class TraceRun:
    """One run to ingest: a label (test id) and the paths handed to ingest()."""

    label: str
    paths: tuple[Path, ...]

    @property
    def files(self) -> list[Path]:
        out: list[Path] = []
        for p in self.paths:
            out.extend(sorted(f for f in p.iterdir() if _is_trace(f)) if p.is_dir() else [p])
        return out

    @property
    def size(self) -> int:
        return sum(f.stat().st_size for f in self.files)


def _is_trace(p: Path) -> bool:
    return p.is_file() and p.name.endswith((".json", ".json.gz"))


def fixture_runs() -> list[TraceRun]:
    """Every trace under ../shared/fixtures/{h200,foreign}; multi-rank folders as one run."""
    if not HAVE_FIXTURES:
        return []
    runs: list[TraceRun] = []
    folders = [FIXTURES / f for f in MULTI_RANK_FOLDERS]
    for top in ("h200", "foreign"):
        for f in sorted((FIXTURES / top).rglob("*.json.gz")):
            if any(folder in f.parents for folder in folders):
                continue
            runs.append(TraceRun(str(f.relative_to(FIXTURES)), (f,)))
    runs += [TraceRun(str(d.relative_to(FIXTURES)) + "/", (d,)) for d in folders if d.is_dir()]
    return runs


def sample_runs() -> list[TraceRun]:
    """The project's own small real traces: each file, and each folder as one run."""
    runs = [TraceRun(f"samples/{f.name}", (f,)) for f in sorted(SAMPLES.glob("*.json.gz"))]
    runs += [TraceRun(f"samples/{d.name}/", (d,)) for d in sorted(SAMPLES.iterdir()) if d.is_dir()]
    return runs


def fixture(rel: str) -> Path:
    """A path under ../shared/fixtures (the caller must carry @requires_fixtures)."""
    return FIXTURES / rel


# ------------------------------------------------------------------ the independent counter


def load_trace_json(path: Path) -> Any:
    """The trace document, numbers with a fraction as exact Decimals."""
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as fh:
        return json.load(fh, parse_float=Decimal)


def trace_events(doc: Any) -> list[Any]:
    return doc["traceEvents"] if isinstance(doc, dict) else doc


@dataclass
class RawRank:
    """What one trace file holds, counted from its JSON with the standard library."""

    file_name: str
    rank: int
    events: int = 0
    kernels: int = 0
    kernel_dur_ns: int = 0
    kernel_ts_min_ns: int | None = None
    kernel_ts_sum_ns: int = 0
    memcpy: int = 0
    memcpy_dur_ns: int = 0
    memset: int = 0
    steps: set[int] = field(default_factory=set)
    # kernels per name of the (earliest) runtime/driver call sharing their correlation id;
    # None counts kernels with no such call
    kernel_launch_api: Counter[str | None] = field(default_factory=Counter)
    record_shapes: bool = False
    # canonical JSON of each CPU op's "Input Dims" value, with multiplicity
    input_dims: Counter[str] = field(default_factory=Counter)
    device_names: list[str] = field(default_factory=list)


def _ns(v: Any) -> int:
    """µs (int or Decimal, as written) -> integer ns, exactly; refuses sub-ns values."""
    assert isinstance(v, int | Decimal), v
    assert not isinstance(v, bool), v
    ns = Decimal(v) * 1000
    assert ns == ns.to_integral_value(), f"{v} µs is not a whole number of ns"
    return int(ns)


def raw_rank(path: Path) -> RawRank:
    doc = load_trace_json(path)
    events = trace_events(doc)
    meta = doc if isinstance(doc, dict) else {}
    dist = meta.get("distributedInfo")
    if isinstance(dist, dict) and isinstance(dist.get("rank"), int):
        rank = dist["rank"]
    elif m := _RANK_IN_NAME.search(path.name):
        rank = int(m.group(1))
    else:
        rank = 0
    out = RawRank(path.name, rank, len(events), record_shapes=bool(meta.get("record_shapes")))
    out.device_names = [d.get("name") for d in meta.get("deviceProperties") or []]
    launches: dict[int, tuple[int, str]] = {}  # correlation -> (ts_ns, name) of earliest call
    kernel_corr: list[Any] = []
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        cat = e.get("cat")
        args = e.get("args") or {}
        if cat in KERNEL_CATS:
            out.kernels += 1
            out.kernel_dur_ns += _ns(e["dur"])
            ts = _ns(e["ts"])
            out.kernel_ts_sum_ns += ts
            out.kernel_ts_min_ns = (
                ts if out.kernel_ts_min_ns is None else min(out.kernel_ts_min_ns, ts)
            )
            kernel_corr.append(args.get("correlation"))
        elif cat in MEMCPY_CATS:
            out.memcpy += 1
            out.memcpy_dur_ns += _ns(e["dur"])
        elif cat in MEMSET_CATS:
            out.memset += 1
        elif cat in LAUNCH_CATS and args.get("correlation") is not None:
            c, ts = args["correlation"], _ns(e["ts"])
            if c not in launches or (ts, e["name"]) < launches[c]:
                launches[c] = (ts, e["name"])
        if cat in CPU_STEP_CATS and (m := _STEP_NAME.match(str(e.get("name")))):
            out.steps.add(int(m.group(1)))
        if cat in CPU_OP_CATS and "Input Dims" in args:
            out.input_dims[json.dumps(args["Input Dims"], default=str)] += 1
    for c in kernel_corr:
        out.kernel_launch_api[launches[c][1] if c in launches else None] += 1
    return out


def raw_run(paths: tuple[Path, ...]) -> list[RawRank]:
    """Raw counts per rank file of one run (a folder = its trace files)."""
    return [raw_rank(f) for f in TraceRun("", paths).files]


# ------------------------------------------------------------------------------ the CLI


def run_cli(*args: str | Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`python -m collectors.ingest ARGS` from the repo root, output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "collectors.ingest", *map(str, args)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def lake_files(data_dir: Path) -> set[str]:
    """Every file and folder under a store's lake (relative paths): staging leftovers included."""
    lake = Path(data_dir) / "lake"
    return {str(p.relative_to(lake)) for p in lake.rglob("*")} if lake.exists() else set()


# ------------------------------------------------------------------- the pages under AppTest


@contextmanager
def dashboard_store(d: Path) -> Iterator[Path]:
    """Point the pages at store `d` (DASH_DATA) while the block runs, without the demo set."""
    (d / ".demo-ingested").touch()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DASH_DATA", str(d))
        yield d


def open_page(page: str, run_id: str | None = None) -> AppTest:
    """Run app.py, pick `run_id` in the sidebar, switch to `page`; it raised nothing."""
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
    if run_id is not None:
        at.session_state["run"] = run_id
    at.run()
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at
