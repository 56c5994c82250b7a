"""The Kernels page under AppTest on real traces (H200 fp32 and bf16, TraceLens's H100 Qwen):
per-kernel statistics and launch configurations against the raw JSON, tensor-core use
against what the runs are known to do."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.pages import open_page, page_runs
from helpers.paths import fixture
from helpers.raw_ops import raw_ops

NAIVE = fixture("h200/train_gpt2_fp32_naive.pt.trace.json.gz")  # fp32, TF32 off
TUNED = fixture("h200/train_gpt2_bf16_tuned.pt.trace.json.gz")  # bf16 nvjet GEMMs, cuDNN SDPA
QWEN = fixture("foreign/tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[Path, str]]:
    yield from page_runs(tmp_path_factory, (NAIVE, TUNED, QWEN))


@pytest.mark.parametrize("trace", [NAIVE, TUNED, QWEN], ids=["naive", "tuned", "qwen"])
def test_every_kernel_matches_the_raw_trace(runs: dict[Path, str], trace: Path) -> None:
    at = open_page("pages/kernels.py", runs[trace])
    table = at.dataframe[1].value.set_index("name")
    raw = raw_ops(trace)
    assert set(table.index) == set(raw.kernel_ns)
    for name, durs in raw.kernel_ns.items():
        row = table.loc[name]
        assert row["calls"] == len(durs)
        assert row["total_ms"] == pytest.approx(sum(durs) / 1e6, abs=1e-9)
        assert (row["min_us"], row["max_us"]) == (min(durs) / 1e3, max(durs) / 1e3)
        configs = raw.kernel_configs[name]
        top = max(configs.values())
        assert (row["grid"], row["block"]) in {c for c, n in configs.items() if n == top}
        assert row["configs"] == len(configs)
    assert table["total_ms"].is_monotonic_decreasing


def test_tensor_core_use_follows_the_precision(runs: dict[Path, str]) -> None:
    naive = open_page("pages/kernels.py", runs[NAIVE])
    assert naive.metric[3].value == "0.0 %"  # fp32 with TF32 off: CUDA cores only
    tuned = open_page("pages/kernels.py", runs[TUNED])
    classes = tuned.dataframe[0].value.set_index("kernel_class")
    assert classes.loc["gemm", "tensor_core_pct"] > 99.0
    # attention: the SDPA kernels on tensor cores, cuDNN's backward helpers (SIMT) beside them
    kernels = tuned.dataframe[1].value
    attention = kernels[kernels["kernel_class"] == "attention"]
    helpers = attention[~attention["tensor_core"]]
    assert helpers["name"].str.contains("compute_dot_do_o|convert_dq").all()
    assert classes.loc["attention", "tensor_core_ms"] == pytest.approx(
        attention.loc[attention["tensor_core"], "total_ms"].sum()
    )
    share = float(tuned.metric[3].value.removesuffix(" %"))
    tc_ms = float(classes["tensor_core_ms"].sum())
    assert share == pytest.approx(100 * tc_ms / float(classes["time_ms"].sum()), abs=0.05)
