"""The Compare page under AppTest on real runs: the default pair (the two latest runs of one
name, and why), the runs from the query, the differences it warns about, step time and
tokens/s first, MFU against one stated peak, and a store with one run."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from helpers.compare import DECODE
from helpers.pages import chart_specs, dashboard_store, open_page, shown
from helpers.paths import REPO, TEST_DATA, fixture
from streamlit.testing.v1 import AppTest

from analysis.compare import Comparison, compare_runs, gone_note, run_side
from analysis.metrics import COMPARE_METRICS
from analysis.specs import match_spec
from collectors.ingest import ingest
from data.store import Store
from pages._ui import fmt_ms

NAIVE = fixture("h200/train_gpt2_fp32_naive.pt.trace.json.gz")
TUNED = fixture("h200/train_gpt2_bf16_tuned.pt.trace.json.gz")
BERT = fixture("foreign/tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    # GIVEN the decode pair under one name, a GPT-2 pair under another, and, newest, a
    # foreign run with no other run of its name
    d = tmp_path_factory.mktemp("compare")
    ids = {
        "decode": ingest([fixture(DECODE[0])], data_dir=d, name="decode"),
        "graphs": ingest([fixture(DECODE[1])], data_dir=d, name="decode"),
        "naive": ingest([NAIVE], data_dir=d, name="gpt2"),
        "tuned": ingest([TUNED], data_dir=d, name="gpt2"),
        "bert": ingest([BERT], data_dir=d),
    }
    with dashboard_store(d):
        ids["store"] = str(d)
        yield ids


def shown_all(texts: object) -> list[str]:
    """Texts as written, without the escapes that keep Markdown from reading run names."""
    return [shown(str(t.value)) for t in texts]  # type: ignore[attr-defined]


def page(**query: str) -> AppTest:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    at.query_params.update(query)
    at.run()
    at.switch_page("pages/compare.py").run()
    assert not at.exception
    assert not at.error
    return at


def analysed(runs: dict[str, str], before: str, after: str) -> Comparison:
    return compare_runs(Store(runs["store"]), runs[before], runs[after])


def test_the_default_pair_is_the_latest_two_of_one_name(runs: dict[str, str]) -> None:
    at = page()
    assert [sb.value for sb in at.selectbox] == [runs["naive"], runs["tuned"]]
    reason = shown_all(at.caption)[0]
    assert "the two latest runs named gpt2" in reason
    assert "gaunernst_bert-small-uncased__1016001, has no earlier run of its name" in reason
    c = analysed(runs, "naive", "tuned")
    assert shown_all(at.markdown)[0] == f"**{c.verdict}**"
    # step time and tokens/s lead, MFU against one stated peak for both runs
    labels = [m.label for m in at.metric]
    assert labels[:3] == ["Step time", "Tokens/s", "MFU"]
    m = c.metrics.set_index("metric")
    step = m.loc["unprofiled_step_ms"]
    assert at.metric[0].value == fmt_ms(step["after"])
    assert at.metric[0].delta == ("+" if step["delta"] >= 0 else "-") + fmt_ms(abs(step["delta"]))
    tokens = m.loc["tokens_per_s"]
    # 8×1024 token ids a step (the bf16 run's batch) over its unprofiled step
    assert tokens["after"] == pytest.approx(8 * 1024 / (step["after"] / 1e3))
    assert at.metric[1].value == f"{tokens['after']:,.0f}"
    mfu, tflops = m.loc["mfu_pct"], m.loc["achieved_tflops"]
    assert c.mfu_reference == "H200 SXM 141GB's dense BF16 peak (989 TFLOP/s)"
    peak = match_spec("NVIDIA H200").peak_flop_per_s("bf16")
    for side in ("before", "after"):
        assert mfu[side] == pytest.approx(100 * tflops[side] * 1e12 / peak)
    assert mfu["change"] == "better"  # the faster bf16 run is not "worse" against fp32's peak
    assert f"MFU against the {c.mfu_reference} for both runs" in at.caption[1].value
    warnings = shown_all(at.warning)
    assert warnings == list(c.differences)
    assert any(w.startswith("Different batch: 7×1000 token ids and 8×1024") for w in warnings)
    assert any(
        w.startswith("Different precision of the matrix work: fp32 and bf16") for w in warnings
    )
    assert not any(w.startswith(("Different devices", "Different models")) for w in warnings)


def test_an_unrelated_pair_is_flagged_before_any_delta(runs: dict[str, str]) -> None:
    at = page(before=runs["tuned"], after=runs["bert"])
    assert at.caption[0].value.startswith("A pair you chose")
    warnings = shown_all(at.warning)
    assert warnings[0] == (
        "Different devices: NVIDIA H200 and NVIDIA H100 80GB HBM3; times and rates depend on "
        "the hardware as much as on the change."
    )
    assert (
        "Different workloads: gpt2 trains, gaunernst_bert-small-uncased__1016001 runs inference."
        in warnings
    )
    assert "Different models: embedding width 768 and 512." in warnings
    assert shown(at.markdown[0].value).startswith(
        f"**Not like for like (the runs differ in {len(warnings)} ways)"
    )


def test_the_decode_pair_classes_and_recommendations(runs: dict[str, str]) -> None:
    at = page(before=runs["decode"], after=runs["graphs"])
    c = analysed(runs, "decode", "graphs")
    assert not at.warning  # the same decode on the same GPU: nothing to warn about
    metrics = {m.label: m for m in at.metric}
    assert not metrics["MFU"].delta  # graph replays have no op shapes: no MFU to compare
    assert "not comparable" in metrics["MFU"].help
    chart = chart_specs(at)[0]
    bars = [t for t in chart["data"] if t["type"] == "bar"]
    assert list(bars[0]["x"]) == list(c.classes["kernel_class"])
    after_y = bars[1]["y"]  # plotly 7 ships numeric arrays as base64 typed arrays
    after_y = np.frombuffer(base64.b64decode(after_y["bdata"]), dtype=after_y["dtype"])
    assert list(after_y) == pytest.approx(list(c.classes["after_ms_per_step"]))
    assert len(at.dataframe[1].value) == len(COMPARE_METRICS)
    gone = at.dataframe[2].value.set_index("id")
    # The after run captured the graph; the before run's report promised its saving within a
    # range (the track record), shown beside the step's measured change.
    report, _ = run_side(Store(runs["store"]), runs["decode"])
    promised = next(r for r in report["recommendations"] if r["id"] == "cuda-graphs")
    low, high = promised["likely_saving_ms"]
    assert low < promised["est_saving_ms"] < high
    graphs = gone.loc["cuda-graphs"]
    assert (graphs["before_likely_low_ms"], graphs["before_likely_high_ms"]) == (low, high)
    note = gone_note(c.metrics)
    assert "ms per step saved by every change between the runs together" in note
    assert note in shown_all(at.caption)


def test_page_with_one_run_says_what_to_do(tmp_path: Path) -> None:
    ingest([TEST_DATA / "cpu_mlp.pt.trace.json.gz"], data_dir=tmp_path)
    with dashboard_store(tmp_path):
        at = open_page("pages/compare.py")
    assert "needs two runs" in at.info[0].value
