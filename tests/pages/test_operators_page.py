"""The Operators page under AppTest on real traces: what it shows per op name and shapes,
per module and per annotation, checked against the raw JSON counted with the stdlib."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.pages import open_page, page_runs
from helpers.paths import TEST_DATA, fixture
from helpers.raw_ops import raw_ops
from helpers.raw_trace import load_trace_json, trace_events
from streamlit.testing.v1 import AppTest

NAIVE = fixture("h200/train_gpt2_fp32_naive.pt.trace.json.gz")
STACK = TEST_DATA / "validation_h200/attention-gpt2-after-stack.pt.trace.json.gz"
BERT = fixture("foreign/tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[Path, str]]:
    yield from page_runs(tmp_path_factory, (NAIVE, STACK, BERT))


def canon(dims: str) -> str:
    return json.dumps(json.loads(dims)) if dims else ""


def page(run_id: str) -> AppTest:
    at = open_page("pages/operators.py", run_id)
    assert not at.error
    return at


@pytest.mark.parametrize("trace", [NAIVE, BERT], ids=["h200-naive", "h100-bert"])
def test_each_op_row_matches_the_raw_trace(runs: dict[Path, str], trace: Path) -> None:
    at = page(runs[trace])
    table = at.dataframe[0].value
    raw = raw_ops(trace)
    want = {(n, canon(d)) for n, d in raw.calls}
    keys = zip(table["name"], table["input_dims"], strict=True)
    got = {(n, canon(d)): i for i, (n, d) in enumerate(keys)}
    assert set(got) == want
    for key, _ in raw.gpu_ns.most_common(5):
        row = table.iloc[got[(key[0], canon(key[1]))]]
        assert row["calls"] == raw.calls[key]
        assert row["gpu_ms"] == pytest.approx(raw.gpu_ns[key] / 1e6, abs=1e-6)
        assert row["cpu_total_ms"] == pytest.approx(raw.cpu_total_ns[key] / 1e6, abs=1e-6)
        assert row["cpu_self_ms"] == pytest.approx(raw.cpu_self_ns[key] / 1e6, abs=1e-6)
    # most GPU time first; the shares of all rows add up to the ops' GPU time
    assert table["gpu_ms"].is_monotonic_decreasing
    assert table["gpu_share_pct"].sum() == pytest.approx(100.0)
    top = max(raw.gpu_ns, key=raw.gpu_ns.__getitem__)
    assert (table["name"].iloc[0], canon(table["input_dims"].iloc[0])) == (top[0], canon(top[1]))


def test_selecting_a_row_lists_the_kernels_it_launched(runs: dict[Path, str]) -> None:
    at = page(runs[NAIVE])
    table = at.dataframe[0].value
    raw = raw_ops(NAIVE)
    name, dims = table["name"].iloc[0], table["input_dims"].iloc[0]
    key = next(k for k in raw.calls if k[0] == name and canon(k[1]) == canon(dims))
    # AppTest has no row clicks: the selection travels in the widget's state
    at.session_state["ops_op"] = {"selection": {"rows": [0], "columns": []}}
    at.run()
    kernels = at.dataframe[1].value
    assert dict(zip(kernels["kernel"], kernels["calls"], strict=True)) == raw.kernels[key]


def test_modules_group_the_work_and_backward_follows_its_forward(runs: dict[Path, str]) -> None:
    at = page(runs[STACK])
    at.radio[0].set_value("module").run()
    table = at.dataframe[0].value.set_index("scope")
    # innermost modules only: GPT2MLP holds Conv1D and NewGELUActivation, no op of its own
    assert "GPT2MLP" not in table.index
    for module in ("GPT2Attention", "GPT2Attention (backward)", "Conv1D", "Conv1D (backward)"):
        assert module in table.index
    events = trace_events(load_trace_json(STACK))
    modules = [e for e in events if e.get("cat") == "python_function"]
    attention = [e for e in modules if e["name"].startswith("nn.Module: GPT2Attention_")]
    assert table.loc["GPT2Attention", "invocations"] == len(attention) > 0
    assert table["gpu_share_pct"].sum() == pytest.approx(100.0)


def test_a_trace_without_modules_says_how_to_record_them(runs: dict[Path, str]) -> None:
    at = page(runs[NAIVE])
    at.radio[0].set_value("module").run()
    assert "with_modules=True" in at.info[0].value
    at.radio[0].set_value("annotation").run()
    scopes = at.dataframe[0].value.set_index("scope")
    assert scopes.loc["Optimizer.step#AdamW.step", "invocations"] == 3
