"""The Live GPUs page under AppTest, on a real store of replayed H200 recordings."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from helpers.nvml_phases import phase_csv
from helpers.pages import chart_specs, dashboard_store, open_page, shown
from helpers.paths import SAMPLES
from streamlit.testing.v1 import AppTest

from collectors.ingest import ingest
from collectors.nvml import NvmlSampler
from collectors.nvml_source import ReplaySource
from data import reads_telemetry as rt
from data.demo import MARKER
from data.store import Store


def replay(data: Path, path: Path, host: str) -> None:
    s = NvmlSampler(data, host=host, source=ReplaySource([path], keep_time=True))
    s.open()
    s.drain()
    s.close()


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    d = tmp_path_factory.mktemp("live")
    ingest([SAMPLES / "gpt_train_bf16.pt.trace.json.gz"], data_dir=d)
    replay(d, SAMPLES / "gpt_train_bf16.nvml.csv", "node-a")
    # A second node replaying only the pinned-copy phase of the H200 recording (real rows):
    # utilization.gpu ~100 % with idle SMs, the trap the page must flag.
    copy = phase_csv(d, "h2d_pinned")
    replay(d, copy, "node-b")
    with dashboard_store(d):
        yield d


def live_page() -> AppTest:
    return open_page("pages/live.py")


def test_live_page_labels_replayed_data_and_flags_the_trap(store_dir: Path) -> None:
    at = live_page()
    assert not at.error
    warnings = [shown(w.value) for w in at.warning]
    assert any(w.startswith("Replayed data") for w in warnings)
    trap = [w for w in warnings if "node-b · GPU 0" in w and "utilization-trap" in w]
    assert len(trap) == 1
    assert "PCIe copy" in trap[0]
    assert not any("node-a · GPU 0" in w for w in warnings)  # a busy training run: no alert
    texts = [shown(m.value) for m in at.markdown]
    headers = [t.split(" · _newest")[0] for t in texts if t.startswith("**node-")]
    assert headers == ["**node-a · GPU 0** · replay of gpt_train_bf16.nvml.csv · _replayed_",
                       "**node-b · GPU 0** · NVIDIA H200 · _replayed_"]  # fmt: skip
    metrics = {m.label for m in at.metric}
    assert {"SM activity", "HBM bandwidth", "Tensor cores", "Power", "SM clock MHz"} <= metrics
    assert "0 %" in [m.value for m in at.metric if m.label == "SM activity"]  # node-b
    charts = chart_specs(at)
    assert charts
    assert "node-b · GPU 0" in [t.get("name") for t in charts[0]["data"]]


def test_old_samples_are_never_called_live(store_dir: Path) -> None:
    # GIVEN recordings replayed with their recorded times (days old)
    at = live_page()
    assert not at.success
    stale = [w.value for w in at.warning if w.value.startswith("Not live")]
    assert len(stale) == 1
    newest = max(
        int(v) for v in rt.gpus(Store(store_dir))["last_ns"]
    )  # the newest sample of any GPU
    when = pd.Timestamp(newest, unit="ns", tz="UTC").strftime("%Y-%m-%d %H:%M:%S UTC")
    assert f"old ({when}); no agent has reported since" in stale[0]
    days = (time.time_ns() - newest) / 86400e9
    assert f"the newest sample is {days:.1f} days old" in stale[0]


def test_a_fresh_replay_reads_as_live(tmp_path: Path) -> None:
    # GIVEN a recording played back now (its samples get this moment's times)
    s = NvmlSampler(
        tmp_path, host="node-c", source=ReplaySource([SAMPLES / "gpt_train_bf16.nvml.csv"])
    )
    s.open()
    s.drain()
    s.close()
    with dashboard_store(tmp_path):
        at = live_page()
    assert at.success[0].value.startswith("Live · newest sample ")
    assert not [w for w in at.warning if w.value.startswith("Not live")]


def test_live_page_shows_a_trace_runs_telemetry(store_dir: Path) -> None:
    at = live_page()
    captions = [c.value for c in at.caption]
    window = rt.run_window(Store(store_dir), Store(store_dir).runs()["run_id"].iloc[0])
    assert window is not None
    # A window under a second is given to the millisecond, not "from 21:57:46 to 21:57:46".
    start, end = (pd.Timestamp(t, unit="ns", tz="UTC") for t in window)
    assert (end - start).total_seconds() < 1
    span = " to ".join(
        f"{t.strftime('%Y-%m-%d %H:%M:%S')}.{t.microsecond // 1000:03d} UTC" for t in (start, end)
    )
    assert any(
        c.startswith("2 samples from 20") and f"the trace spans {span}" in c for c in captions
    ), captions
    assert len(chart_specs(at)) == 2


def test_live_page_without_telemetry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DASH_DATA", str(tmp_path))
    (tmp_path / MARKER).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / MARKER).touch()
    at = live_page()
    assert "No GPU telemetry yet" in at.info[0].value
