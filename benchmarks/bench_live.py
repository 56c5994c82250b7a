"""Live page at scale: 24 h of 1 s samples from 8 GPUs, and the store's write throughput.

The rows are the H200 recording in tests/data (real values) replayed in a loop onto 8 GPUs
and 86 400 one-second ticks, written as the agent leaves them: one-second segments merged
into minute and hour segments (collectors.nvml, data.compaction). Then, on that store:
the Live page's reads + analysis + figure (JSON-serialized as Streamlit sends it), and the
whole page under AppTest with the 24 h window. Usage: python benchmarks/bench_live.py
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from analysis.figures.telemetry import gpu_panels  # noqa: E402
from analysis.telemetry import alerts  # noqa: E402
from collectors.nvml_source import ReplaySource  # noqa: E402
from data import reads_telemetry as rt  # noqa: E402
from data.compaction import compact_segments  # noqa: E402
from data.demo import MARKER  # noqa: E402
from data.lake import Lake  # noqa: E402
from data.schema import arrow_schema  # noqa: E402
from data.store import Store  # noqa: E402

RECORDING = ROOT / "data" / "samples" / "nvml_phases_h200.csv"
GPUS, SECONDS, HOST = 8, 86_400, "node0"
OUT = ROOT / "benchmarks" / "out" / "live.json"


def base_table() -> pa.Table:
    src = ReplaySource([RECORDING])
    rows = []
    while True:
        try:
            rows.append(src.sample(0))
        except Exception:
            break
    schema = arrow_schema("gpu_samples").remove(0)
    extra = {"gpu": 0, "ts_ns": 0, "source": "replay", "agent_id": "bench", "sample_cost_ns": 0}
    return pa.Table.from_pylist([{**r, **extra} for r in rows], schema)


def tiled(base: pa.Table, t0_ns: int, first_s: int, seconds: int) -> pa.Table:
    """seconds × GPUS rows starting at second first_s, values cycling through the recording."""
    import numpy as np

    sec = np.repeat(np.arange(first_s, first_s + seconds), GPUS)
    gpu = np.tile(np.arange(GPUS, dtype=np.int32), seconds)
    t = base.take(pa.array((sec * 7 + gpu * 31) % base.num_rows))
    t = t.set_column(t.schema.get_field_index("ts_ns"), "ts_ns", pa.array(t0_ns + sec * 10**9))
    return t.set_column(t.schema.get_field_index("gpu"), "gpu", pa.array(gpu))


def main() -> None:
    base = base_table()
    result: dict[str, object] = {"gpus": GPUS, "seconds": SECONDS, "rows": GPUS * SECONDS}
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        lake = Lake(data / "lake")
        t0 = time.time_ns() - SECONDS * 10**9
        # Write throughput as the agent writes: 1 s segments of 8 rows, merged every minute.
        n = 600
        seg = [tiled(base, t0, s, 1) for s in range(n)]
        start = time.perf_counter()
        small: list[Path] = []
        minutes: list[Path] = []
        for s in range(n):
            small.append(lake.write_segment("gpu_samples", HOST, seg[s]))
            if len(small) == 60:
                minutes.append(compact_segments(lake, "gpu_samples", HOST, small))
                small = []
        elapsed = time.perf_counter() - start
        result["write_1s_segments"] = {
            "segments": n,
            "ms_per_segment_incl_merge": 1e3 * elapsed / n,
            "rows_per_s": n * GPUS / elapsed,
        }
        for p in minutes:
            p.unlink()
        # The rest of the day, as the agent leaves it: hour files, minute files, 1 s files.
        start = time.perf_counter()
        hours = SECONDS // 3600 - 1
        for h in range(hours):
            lake.write_segment("gpu_samples", HOST, tiled(base, t0, h * 3600, 3600))
        for m in range(59):
            lake.write_segment("gpu_samples", HOST, tiled(base, t0, hours * 3600 + m * 60, 60))
        for s in range(hours * 3600 + 59 * 60, SECONDS):
            lake.write_segment("gpu_samples", HOST, tiled(base, t0, s, 1))
        elapsed = time.perf_counter() - start
        files = len(list((data / "lake" / "gpu_samples" / f"host={HOST}").glob("*.parquet")))
        result["write_day"] = {"s": elapsed, "files": files, "rows_per_s": GPUS * SECONDS / elapsed}
        store = Store(data)
        assert store.query("SELECT count(*) n FROM gpu_samples")["n"][0] == GPUS * SECONDS

        def page_work() -> int:
            gpus = rt.gpus(store)
            end = int(gpus["last_ns"].max()) + 1
            frame = rt.bucketed(store, end - SECONDS * 10**9, end, SECONDS * 10**9 // 600)
            recent = rt.samples(store, end - 60 * 10**9, end)
            alerts(recent, gpus)
            return len(gpu_panels(frame).to_json())

        page_work()  # warm: imports, DuckDB's first glob
        times = []
        for _ in range(3):
            start = time.perf_counter()
            size = page_work()
            times.append(time.perf_counter() - start)
        result["reads_analysis_figure_s"] = {"median": sorted(times)[1], "json_bytes": size}
        result["app_test_24h_s"] = app_test(data)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))


def app_test(data: Path) -> float:
    from streamlit.testing.v1 import AppTest  # noqa: TID251 (drives the page, as the tests do)

    os.environ["DASH_DATA"] = str(data)
    (data / MARKER).touch()
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    at.switch_page("pages/live.py").run()
    at.selectbox[0].set_value("24 h")
    start = time.perf_counter()
    at.run()
    elapsed = time.perf_counter() - start
    assert not at.exception, at.exception
    return elapsed


if __name__ == "__main__":
    main()
