"""The Memory page under AppTest on real traces (H200 GPT-2 fp32, TraceLens's H100 BERT): the
peaks, the live allocations at the peak by the op that made them, the allocator's counts and
the headroom, against the raw JSON counted with the stdlib."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from helpers.pages import open_page, page_runs
from helpers.paths import TEST_DATA, fixture
from helpers.raw_ops import raw_memory
from helpers.raw_trace import load_trace_json, trace_events
from streamlit.testing.v1 import AppTest

NAIVE = fixture("h200/train_gpt2_fp32_naive.pt.trace.json.gz")
BERT = fixture("foreign/tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz")
NO_MEMORY = fixture("foreign/tracelens/b200/eager_trace.json.gz")  # no profile_memory
CPU_ONLY = TEST_DATA / "cpu_mlp.pt.trace.json.gz"  # the CPU allocator's events only
# A cache emptied every step: 32 cudaMalloc and 32 cudaFree reach the driver.
EMPTIED = TEST_DATA / "validation_h200" / "allocator-gpt2-before.pt.trace.json.gz"
GIB = 2**30


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[Path, str]]:
    yield from page_runs(tmp_path_factory, (NAIVE, BERT, NO_MEMORY, CPU_ONLY, EMPTIED))


def page(run_id: str) -> AppTest:
    at = open_page("pages/memory.py", run_id)
    assert not at.error
    return at


@pytest.mark.parametrize("trace", [NAIVE, BERT], ids=["h200-naive", "h100-bert"])
def test_the_peak_and_what_holds_it(runs: dict[Path, str], trace: Path) -> None:
    at = page(runs[trace])
    raw = raw_memory(trace)
    every = at.dataframe[-1].value.set_index("device")
    gpu = every.loc["cuda:0"]
    assert gpu["peak_allocated_gib"] == pytest.approx(raw.peak_allocated / GIB)
    assert gpu["peak_reserved_gib"] == pytest.approx(raw.peak_reserved / GIB)
    assert (gpu["allocations"], gpu["frees"]) == (raw.allocations, raw.frees)
    peak_ms = (raw.peak_ns - raw.first_ns) / 1e6
    assert f"allocated at {peak_ms:,.3f} ms" in at.markdown[0].value
    alive = at.dataframe[0].value
    got = {
        None if pd.isna(op) else op: gib for op, gib in zip(alive["op"], alive["gib"], strict=True)
    }
    assert got.keys() == raw.alive_by_op.keys()
    for op, size in raw.alive_by_op.items():
        assert got[op] == pytest.approx(size / GIB)
    # headroom: the device's memory minus the reserved peak
    assert gpu["headroom_gib"] == pytest.approx(gpu["memory_gib"] - gpu["peak_reserved_gib"])


def test_the_headroom_metric_states_the_device_memory(runs: dict[Path, str]) -> None:
    at = page(runs[NAIVE])
    labels = [m.label for m in at.metric]
    assert labels == ["Peak allocated", "Peak reserved", "Headroom", "Reserved of the device"]
    assert at.metric[2].value.endswith("GiB")


def test_a_trace_without_allocator_events_says_how_to_record_them(
    runs: dict[Path, str],
) -> None:
    at = page(runs[NO_MEMORY])
    assert "profile_memory=True" in at.info[0].value


def test_a_cpu_only_trace_shows_the_cpu_allocator(runs: dict[Path, str]) -> None:
    at = page(runs[CPU_ONLY])
    raw = raw_memory(CPU_ONLY, device_type=0, device_id=-1)
    every = at.dataframe[-1].value.set_index("device")
    assert list(every.index) == ["cpu"]
    assert every.loc["cpu", "peak_allocated_gib"] == pytest.approx(raw.peak_allocated / GIB)
    assert at.metric[2].value == "—"  # no device memory for the CPU: no headroom


def _driver_calls(trace: Path) -> dict[str, int]:
    """cudaMalloc/cudaFree runtime calls in the raw JSON, counted with the stdlib."""
    events = trace_events(load_trace_json(trace))
    calls = Counter(e.get("name") for e in events if e.get("cat") == "cuda_runtime")
    return {n: calls[n] for n in ("cudaMalloc", "cudaFree") if calls[n]}


@pytest.mark.parametrize("trace", [NAIVE, EMPTIED], ids=["cache-held", "cache-emptied"])
def test_the_allocator_calls_that_reached_the_driver(runs: dict[Path, str], trace: Path) -> None:
    at = page(runs[trace])
    raw = _driver_calls(trace)
    (caption,) = [c.value for c in at.caption if c.value.startswith("The caching allocator")]
    if not raw:
        assert caption.endswith("; none reached the driver: the cache held every allocation.")
        return
    assert caption.endswith("; these reached the driver (each cudaFree synchronises the device):")
    table = at.dataframe[1].value.set_index("name")
    assert {n: int(table.loc[n, "calls"]) for n in raw} == raw
