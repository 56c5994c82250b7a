"""The Live GPUs page under AppTest, on a real store of replayed H200 recordings."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.pages import dashboard_store, open_page, shown
from helpers.paths import REPO, SAMPLES
from streamlit.testing.v1 import AppTest

from collectors.ingest import ingest
from collectors.nvml import NvmlSampler
from collectors.nvml_source import ReplaySource

PHASES = REPO / "data" / "samples" / "nvml_phases_h200.csv"


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
    with PHASES.open(newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["phase"] == "h2d_pinned"]
    copy = d / "h2d.csv"
    with copy.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    inventory = PHASES.with_name("nvml_phases_h200.inventory.json")
    (d / "h2d.inventory.json").write_bytes(inventory.read_bytes())  # the GPU it came from
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
    trap = [w for w in warnings if "node-b:0" in w and "utilization-trap" in w]
    assert len(trap) == 1
    assert "PCIe copy" in trap[0]
    assert not any("node-a:0" in w for w in warnings)  # a busy training run: no alert
    headers = [shown(m.value) for m in at.markdown if m.value.startswith("**node")]
    assert headers == ["**node-a:0** · replay of gpt_train_bf16.nvml.csv · _replayed_",
                       "**node-b:0** · NVIDIA H200 · _replayed_"]  # fmt: skip
    metrics = {m.label for m in at.metric}
    assert {"SM activity", "HBM bandwidth", "Tensor cores", "Power", "SM clock MHz"} <= metrics
    assert "0 %" in [m.value for m in at.metric if m.label == "SM activity"]  # node-b
    charts = at.get("plotly_chart")
    assert charts
    assert '"name":"node-b:0"' in charts[0].proto.spec.replace(" ", "")


def test_live_page_shows_a_trace_runs_telemetry(store_dir: Path) -> None:
    at = live_page()
    captions = [c.value for c in at.caption]
    assert any(c.startswith("2 samples from") for c in captions), captions
    assert len(at.get("plotly_chart")) == 2


def test_live_page_without_telemetry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DASH_DATA", str(tmp_path))
    (tmp_path / ".demo-ingested").parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / ".demo-ingested").touch()
    at = live_page()
    assert "No GPU telemetry yet" in at.info[0].value
