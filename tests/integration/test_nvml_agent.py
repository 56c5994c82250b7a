"""The NVML agent on recordings made on real H200s: replay, segments, NULLs, kill -9, restart.

No GPU here, so the agent runs on `--replay` of CSVs recorded on real GPUs (the shared H200
fixtures, data/samples, and data/samples/nvml_phases_h200.csv recorded by this agent itself
through tools/nvml_phases.py). NVML's own error paths use the real pynvml error type.
"""

from __future__ import annotations

import csv
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pynvml
import pytest
from helpers.cli import run_module
from helpers.paths import FIXTURES, REPO, SAMPLES

import collectors.nvml as agent
from collectors.nvml import NvmlSampler
from collectors.nvml_source import GpuLostError, PynvmlSource, ReplaySource
from collectors.nvml_source.gpu import PROCESS_LIST_PERIOD_NS, _Gpu
from data.errors import DashError, NvmlUnavailableError, RecordingFormatError
from data.store import Store

PHASES = REPO / "data" / "samples" / "nvml_phases_h200.csv"
RECORDINGS = [
    *sorted((FIXTURES / "h200").glob("*.nvml.csv")),
    *sorted(SAMPLES.glob("*.nvml.csv")),
    PHASES,
]


def nvml_present() -> bool:
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return False
    pynvml.nvmlShutdown()
    return True


def replay_into(data: Path, *paths: Path, host: str = "rec") -> NvmlSampler:
    s = NvmlSampler(data, host=host, source=ReplaySource(list(paths), keep_time=True))
    s.open()
    s.drain()
    s.close()
    return s


def agent_cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return run_module("collectors.nvml", *args, timeout=60)


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.name)
def test_recording_replays_exactly(tmp_path: Path, path: Path) -> None:
    with path.open(newline="") as fh:
        raw = list(csv.DictReader(fh))
    replay_into(tmp_path, path)
    got = Store(tmp_path).query("SELECT * FROM gpu_samples ORDER BY gpu, ts_ns")
    assert len(got) == len(raw)
    assert set(got["source"]) == {"replay"}
    ts_col = "ts_ns" if "ts_ns" in raw[0] else "ts_unix_ns"
    assert sorted(got["ts_ns"]) == sorted(int(r[ts_col]) for r in raw)  # exact ns
    sm_col = "gpm_sm_util_pct" if "gpm_sm_util_pct" in raw[0] else "gpm_sm_util"
    # An empty cell (GPM had no previous snapshot yet) stays NULL, never 0.
    assert got["gpm_sm_util_pct"].isna().sum() == sum(1 for r in raw if not r[sm_col])
    assert got["power_mw"].sum() == sum(int(r["power_mw"]) for r in raw)
    assert math.isclose(
        got["gpm_sm_util_pct"].sum(), sum(float(r[sm_col] or 0) for r in raw), rel_tol=1e-12
    )


def test_h200_recording_has_null_nvlink_and_its_inventory(tmp_path: Path) -> None:
    replay_into(tmp_path, PHASES)
    s = Store(tmp_path)
    nv = s.query("SELECT count(gpm_nvlink_rx_mib_s) n, count(*) total FROM gpu_samples")
    assert nv["n"][0] == 0
    assert nv["total"][0] > 200
    assert s.query("SELECT count(*) n FROM gpu_samples WHERE gpm_sm_util_pct IS NULL")["n"][0] < 3
    inv = s.query("SELECT * FROM gpu_inventory").iloc[0]
    assert inv["name"] == "NVIDIA H200"
    assert inv["architecture"] == "Hopper"
    assert inv["peak_hbm_bytes_per_s"] == 2 * 3201e6 * 6016 / 8
    assert json.loads(inv["unsupported"]) == ["gpm_nvlink_rx_mib_s", "gpm_nvlink_tx_mib_s"]


def test_a_recording_with_an_inventory_names_the_gpu_whatever_the_order() -> None:
    # The demo replays its traces' telemetry (no inventory beside it) with the H200 phases
    # (an inventory beside it) as GPU 0: the GPU is the H200, not "replay of" the first file.
    bare = SAMPLES / "decode_b1_eager.nvml.csv"
    for paths in ([bare, PHASES], [PHASES, bare]):
        assert ReplaySource(paths).inventory(0)["name"] == "NVIDIA H200"
    assert ReplaySource([bare]).inventory(0)["name"] == "replay of decode_b1_eager.nvml.csv"


def test_unsupported_metric_is_null_with_one_warning() -> None:
    warnings: list[str] = []
    src = PynvmlSource.__new__(PynvmlSource)  # no GPU here: exercise the query path only
    src.N, src._warn = pynvml, warnings.append
    g = _Gpu(3, handle=None)

    def unsupported() -> int:
        raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)

    assert src.read(g, ("temp_mem_c",), unsupported) is None
    assert src.read(g, ("temp_mem_c",), lambda: 41) is None  # not asked again
    assert len(warnings) == 1
    assert "gpu 3: temp_mem_c" in warnings[0]
    assert "NULL" in warnings[0]
    assert src.read(g, ("power_mw",), lambda: 120_000) == 120_000

    def lost() -> int:
        raise pynvml.NVMLError(pynvml.NVML_ERROR_GPU_IS_LOST)

    with pytest.raises(GpuLostError, match="gpu 3"):
        src.read(g, ("power_mw",), lost)


def test_process_list_is_read_once_a_second_and_carried_between() -> None:
    # The list recorded on the H200 (data/samples/nvml_phases_h200.csv), answered the way
    # pynvml answers; what counts is how often the agent asks and what rows it writes.
    with (SAMPLES / "nvml_phases_h200.csv").open() as f:
        recorded = json.loads(next(csv.DictReader(f))["processes"])
    asked: list[int] = []

    class Nvml:
        NVMLError = pynvml.NVMLError

        @staticmethod
        def nvmlDeviceGetComputeRunningProcesses(handle: object) -> list[object]:
            asked.append(1)
            return [type("P", (), {"pid": p, "usedGpuMemory": b})() for p, b in recorded]

    src = PynvmlSource.__new__(PynvmlSource)
    src.N, src._warn = Nvml, lambda _m: None
    g = _Gpu(0, handle=None)
    rows = [dict.fromkeys(("process_count", "processes")) for _ in range(3)]
    src._processes(g, rows[0])
    src._processes(g, rows[1])  # a tick later: carried, not asked
    assert len(asked) == 1
    assert rows[0] == rows[1] == {"process_count": 1, "processes": json.dumps(recorded)}
    assert g.procs_ns is not None
    g.procs_ns -= PROCESS_LIST_PERIOD_NS  # a second on
    src._processes(g, rows[2])
    assert len(asked) == 2
    assert rows[2] == rows[0]


@pytest.mark.skipif(nvml_present(), reason="this machine has NVML")
def test_no_nvml_exits_nonzero_with_one_line(tmp_path: Path) -> None:
    r = agent_cli("--duration", "1", "--data", tmp_path)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: NVML: ")
    with pytest.raises(NvmlUnavailableError):
        NvmlSampler(tmp_path).start()


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "notes.csv"
    bad.write_text("a,b\n1,2\n")
    r = agent_cli("--replay", bad, "--data", tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip() == (
        f"error: {bad}: no known telemetry column (expected e.g. util_gpu_pct, power_mw)"
    )
    for interval in ("0.05", "inf", "nan"):
        r = agent_cli("--replay", PHASES, "--interval", interval, "--data", tmp_path)
        assert r.returncode == 2
        assert r.stderr == (
            f"error: argument --interval: {interval!r}: expected seconds, 0.1 to 3600 "
            "(see python -m collectors.nvml --help)\n"
        )
    with pytest.raises(RecordingFormatError, match="cannot loop"):
        ReplaySource([PHASES], loop=True, keep_time=True)
    for seconds in (0.01, float("inf"), float("nan")):
        with pytest.raises(DashError, match=r"expected 0\.1 to 3600 s"):
            NvmlSampler(tmp_path, interval_s=seconds)


def test_json_line_and_a_store_that_is_a_file(tmp_path: Path) -> None:
    d = tmp_path / "store"
    r = agent_cli("--replay", PHASES, "--keep-time", "--host", "h", "--data", d, "--json")
    assert r.returncode == 0, r.stderr
    written = len(Store(d).query("SELECT * FROM gpu_samples"))
    assert json.loads(r.stdout) == {"ok": True, "host": "h", "gpus": [0], "samples": written}
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    r = agent_cli("--replay", PHASES, "--keep-time", "--data", not_a_folder)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"error: {not_a_folder}"), lines[0]


class _LostGpu:
    """A source whose one GPU is lost at its first sample."""

    kind = "nvml"

    def __init__(self, gpus: list[int] | None = None, warn: object = None) -> None:
        pass

    def gpu_indices(self) -> list[int]:
        return [0]

    def inventory(self, gpu: int) -> dict[str, object]:
        return {"name": "lost"}

    def sample(self, gpu: int) -> dict[str, object]:
        raise GpuLostError("gpu 0: fell off the bus")

    def close(self) -> None:
        pass


@pytest.mark.parametrize("as_json", [False, True])
def test_losing_every_gpu_exits_1_with_one_error(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    as_json: bool,
) -> None:
    monkeypatch.setattr(agent, "PynvmlSource", _LostGpu)
    monkeypatch.setattr(signal, "signal", lambda *a: None)  # keep pytest's Ctrl-C handler
    status = agent.main(["--duration", "1", "--data", str(tmp_path), *["--json"] * as_json])
    assert status == 1
    out, err = capsys.readouterr()
    if as_json:
        assert json.loads(out) == {
            "ok": False,
            "error": {"type": "AllGpusLostError", "message": "every GPU was lost"},
        }
    else:
        assert err.splitlines()[-1] == "error: every GPU was lost"


def test_sampler_writes_about_one_segment_a_second(tmp_path: Path) -> None:
    s = NvmlSampler(tmp_path, interval_s=0.1, host="n1", source=ReplaySource([PHASES], loop=True))
    s.start()
    time.sleep(2.5)
    s.stop()
    files = sorted((tmp_path / "lake" / "gpu_samples" / "host=n1").glob("*.parquet"))
    rows = [pq.ParquetFile(f).metadata.num_rows for f in files]
    assert 2 <= len(files) <= 4, rows  # one a second, plus what stop() flushed
    assert sum(rows) == s.samples_written >= 15
    got = Store(tmp_path).query("SELECT * FROM gpu_samples ORDER BY ts_ns")
    assert (got["sample_cost_ns"] > 0).all()
    assert got["ts_ns"].is_monotonic_increasing
    # The replay stamps the rows with play time, and plays the recorded values in order.
    first = ReplaySource([PHASES]).sample(0)
    assert got["power_mw"].iloc[0] == first["power_mw"]


def test_segments_are_merged_without_losing_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(agent, "MERGE_FANIN", 3)
    s = NvmlSampler(tmp_path, host="n1", source=ReplaySource([PHASES]))
    s.open()
    for _ in range(10):
        s.tick()
        s.flush()
    folder = tmp_path / "lake" / "gpu_samples" / "host=n1"
    # 10 one-tick segments: 9 merged by threes into 3, those 3 into 1, the 10th alone.
    assert len(list(folder.glob("*.parquet"))) == 2
    got = Store(tmp_path).query("SELECT power_mw FROM gpu_samples ORDER BY ts_ns")
    src = ReplaySource([PHASES])
    expected = [src.sample(0)["power_mw"] for _ in range(10)]
    assert got["power_mw"].tolist() == expected


def test_kill_9_loses_at_most_the_last_second(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "collectors.nvml", "--replay", str(PHASES), "--loop",
         "--interval", "0.1", "--data", str(tmp_path), "--host", "n1"],
        cwd=REPO, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    folder = tmp_path / "lake" / "gpu_samples" / "host=n1"
    deadline = time.monotonic() + 30
    while len(list(folder.glob("*.parquet"))) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.55)  # somewhere between two writes
    killed_ns = time.time_ns()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    got = Store(tmp_path).query("SELECT max(ts_ns) last, count(*) n FROM gpu_samples")
    assert got["n"][0] >= 20
    assert killed_ns - int(got["last"][0]) <= 1_300_000_000  # 1 s flush period + one tick
    assert not list(folder.glob(".*.tmp"))  # no half-written segment left visible


def test_restart_continues_the_series(tmp_path: Path) -> None:
    for _ in range(2):
        r = agent_cli("--replay", PHASES, "--loop", "--interval", "0.1", "--duration", "1.2",
                      "--data", tmp_path, "--host", "n1")  # fmt: skip
        assert r.returncode == 0, r.stderr
    s = Store(tmp_path)
    runs = s.query(
        "SELECT agent_id, min(ts_ns) a, max(ts_ns) b, count(*) n FROM gpu_samples "
        "GROUP BY agent_id ORDER BY a"
    )
    assert len(runs) == 2
    assert runs["b"][0] < runs["a"][1]
    assert (runs["n"] >= 10).all()
    assert len(s.query("SELECT * FROM gpu_inventory WHERE host = 'n1'")) == 2
    from data.reads_telemetry import gpus

    g = gpus(s)
    assert g[["host", "gpu", "samples"]].values.tolist() == [["n1", 0, int(runs["n"].sum())]]


def test_a_merge_cut_short_is_finished_at_the_next_start(tmp_path: Path) -> None:
    """kill -9 between a merge's output landing and its inputs' removal: rows are in the table
    twice until the agent starts again, which finishes the merge from its manifest."""
    for _ in range(2):  # two segments to merge (a replay with recorded times writes one)
        s = NvmlSampler(tmp_path, host="h200", source=ReplaySource([PHASES], keep_time=True))
        s.open()
        s.drain()
        s.close()
    store = Store(tmp_path)
    rows = int(store.query("SELECT count(*) n FROM gpu_samples").iloc[0]["n"])
    partition = store.lake.segment_path("gpu_samples", "h200").parent
    inputs = sorted(partition.glob("*.parquet"))
    assert len(inputs) >= 2
    # The merge's first two steps, then the kill: manifest and output written, inputs kept.
    merged = pa.concat_tables(pq.ParquetFile(p).read() for p in inputs)
    out = store.lake.segment_path("gpu_samples", "h200")
    out.with_name(f".merge-{out.stem}.json").write_text(
        json.dumps({"output": out.name, "inputs": [p.name for p in inputs]})
    )
    store.lake.write_segment("gpu_samples", "h200", merged, out)
    assert int(store.query("SELECT count(*) n FROM gpu_samples").iloc[0]["n"]) == 2 * rows

    restarted = NvmlSampler(tmp_path, host="h200", source=ReplaySource([PHASES], keep_time=True))
    restarted.open()  # repairs before it samples anything
    assert int(store.query("SELECT count(*) n FROM gpu_samples").iloc[0]["n"]) == rows
    assert not list(partition.glob(".merge-*.json"))
    restarted.close()
