"""power-throttling (analysis/rules_telemetry.py) on real traces with the NVML samples
recorded beside them, replayed through the agent into a real store."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from helpers.paths import SAMPLES, fixture
from helpers.rules import fire, saving

from analysis.facts import Facts, gather
from collectors.ingest import ingest
from collectors.nvml import NvmlSampler
from collectors.nvml_source import ReplaySource
from data import reads_telemetry as rt
from data.store import Store

QUIET = (  # recorded on an H200 that never left 1980 MHz during these runs
    "decode_b1",
    "hf_llama_generate_b4",
    "train_gpt2_bf16_tuned",
    "train_gpt2_fp32_naive",
)
THROTTLED_ON = "resnet50_train_fp32"
PHASES = SAMPLES / "nvml_phases_h200.csv"


def _replay(data: Path, csv: Path) -> None:
    s = NvmlSampler(data, host="h200", source=ReplaySource([csv], keep_time=True))
    s.open()
    s.drain()
    s.close()


@pytest.fixture(scope="module")
def telemetry_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, dict[str, str]]:
    """A store with the quiet runs and their NVML recordings, and the ResNet-50 run under
    power-capped samples: (store, run id by name)."""
    d = tmp_path_factory.mktemp("telemetry-rules")
    ids = {n: ingest([fixture(f"h200/{n}.pt.trace.json.gz")], data_dir=d) for n in QUIET}
    for n in QUIET:
        _replay(d, fixture(f"h200/{n}.nvml.csv"))
    # No H200 recording throttled during a profiled window. The bf16 GEMM phase of the
    # project's H200 recording did (power cap, SM clock down to 1395 MHz): those real rows,
    # their spacing kept, are moved onto the window of the ResNet-50 training run.
    ids[THROTTLED_ON] = ingest([fixture(f"h200/{THROTTLED_ON}.pt.trace.json.gz")], data_dir=d)
    start, _ = rt.run_window(Store(d), ids[THROTTLED_ON]) or (0, 0)
    gemm = pd.read_csv(PHASES)
    gemm = gemm[gemm["phase"] == "gemm_bf16"].drop(columns="phase")
    gemm = gemm[gemm["util_gpu_pct"].cummax() > 50]  # from the GEMMs' start (idle before)
    gemm["ts_ns"] = start + 20_000_000 + (gemm["ts_ns"] - gemm["ts_ns"].iloc[0])
    moved = d / "gemm_on_resnet.csv"
    gemm.to_csv(moved, index=False)
    inventory = PHASES.with_name("nvml_phases_h200.inventory.json")
    (d / "gemm_on_resnet.inventory.json").write_text(inventory.read_text())
    _replay(d, moved)
    return Store(d), ids


@pytest.fixture(scope="module")
def runs(telemetry_store: tuple[Store, dict[str, str]]) -> dict[str, Facts]:
    store, ids = telemetry_store
    return {n: gather(store, i) for n, i in ids.items()}


@pytest.mark.parametrize("name", QUIET)
def test_no_alarm_on_runs_at_full_clock(runs: dict[str, Facts], name: str) -> None:
    facts = runs[name]
    assert len(facts.telemetry) >= 1  # samples were taken during the run
    assert fire(facts, "power-throttling") is None


def test_power_capped_samples_cost_their_clock_loss(
    runs: dict[str, Facts], telemetry_store: tuple[Store, dict[str, str]]
) -> None:
    facts = runs[THROTTLED_ON]
    store, ids = telemetry_store
    found = fire(facts, "power-throttling")
    assert found is not None
    assert "power cap" in found.evidence[0]
    assert "1980 MHz" in found.evidence[1]
    # Independent: the moved CSV rows that fall inside the run's window.
    window = rt.run_window(store, ids[THROTTLED_ON])
    assert window is not None
    rows = pd.read_csv(store.data_dir / "gemm_on_resnet.csv")
    rows = rows[rows["ts_ns"].between(*window)]
    assert len(rows) >= 2
    throttled = ((rows["clocks_event_reasons"] & 0xEC) > 0) & (rows["sm_clock_mhz"] < 1980)
    loss = float(((1 - rows["sm_clock_mhz"] / 1980) * throttled).mean())
    # the clock loss on the GPU's busy time per step (the step model's G; a GPU-bound step)
    model = facts.step_model
    assert model is not None
    assert model.gpu_ms >= model.host_ms
    assert saving(facts, "power-throttling") == pytest.approx(model.gpu_ms * loss)
