"""The runs the tests ingest: every shared fixture and every project sample, as labels
(the test ids) and the paths handed to ingest()."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from helpers.paths import FIXTURES, SAMPLES

# A folder that holds one multi-rank run (everything else in the fixtures is one file = one run).
MULTI_RANK_FOLDERS = ("foreign/hta/trace_filter",)


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
    """Every trace under the shared fixtures' h200/ and foreign/; multi-rank folders as one run."""
    runs: list[TraceRun] = []
    folders = [FIXTURES / f for f in MULTI_RANK_FOLDERS]
    for top in ("h200", "foreign"):
        for f in sorted((FIXTURES / top).rglob("*.json.gz")):
            if any(folder in f.parents for folder in folders):
                continue
            runs.append(TraceRun(str(f.relative_to(FIXTURES)), (f,)))
    runs += [TraceRun(str(d.relative_to(FIXTURES)) + "/", (d,)) for d in folders if d.is_dir()]
    return runs


def foreign_labels() -> list[str]:
    """The labels of the public traces from other projects (fixtures' foreign/)."""
    return [r.label for r in fixture_runs() if r.label.startswith("foreign/")]


def sample_runs() -> list[TraceRun]:
    """The project's own small real traces: each file, and each folder as one run."""
    runs = [TraceRun(f"samples/{f.name}", (f,)) for f in sorted(SAMPLES.glob("*.json.gz"))]
    runs += [TraceRun(f"samples/{d.name}/", (d,)) for d in sorted(SAMPLES.iterdir()) if d.is_dir()]
    return runs
