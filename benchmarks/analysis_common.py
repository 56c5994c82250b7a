"""What the analysis benchmarks share: the big run's store, a median timer, a page timer.

Imported by benchmarks/bench_breakdown.py and bench_roofline.py (run from the repo root,
`python benchmarks/bench_X.py`, which puts this folder on sys.path).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from collectors.ingest import ingest  # noqa: E402
from data.demo import MARKER  # noqa: E402
from data.store import Store  # noqa: E402

BIG = ROOT / "benchmarks" / "out" / "big_trace.json"


def big_run(prefix: str) -> tuple[Store, Path, Any]:
    """The store holding the 1.3 M-event run, its folder, and the run's `runs` row. The
    command line's `--data DIR` names a store that holds it; else it is ingested into a
    temporary store."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, help="a store holding the big run")
    data = ap.parse_args().data or Path(tempfile.mkdtemp(prefix=prefix))
    s = Store(data)
    if s.runs().empty:
        ingest([BIG], data_dir=data, name="big")
    return s, data, s.runs().iloc[0]


def timed(fn: Callable[[], object], n: int = 5) -> float:
    """Median seconds of `n` calls after one warm-up call."""
    fn()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def page_seconds(
    data: Path,
    run_id: str,
    page: str,
    n: int = 3,
    state: dict[str, object] | None = None,
    before_each: Callable[[], object] | None = None,
) -> float:
    """Median server-side render time of one page run under AppTest, after one warm-up
    (`before_each` runs before every render, e.g. to empty Streamlit's caches)."""
    from streamlit.testing.v1 import AppTest  # noqa: TID251 (drives the pages, as tests do)

    os.environ["DASH_DATA"] = str(data)
    (data / MARKER).touch()
    times = []
    for _ in range(n + 1):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        at.session_state["run"] = run_id
        for k, v in (state or {}).items():
            at.session_state[k] = v
        at.run()
        if before_each is not None:
            before_each()
        t = time.perf_counter()
        at.switch_page(page).run()
        times.append(time.perf_counter() - t)
        assert not at.exception, at.exception
    return statistics.median(times[1:])
