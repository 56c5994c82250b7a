"""The Recommendations page under AppTest, on the project's own H200 traces: ranked cards with
evidence, saving and fix; a run with nothing to advise says so; the timeline link opens the
window it names."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.pages import dashboard_store, open_page, shown
from helpers.paths import REPO, SAMPLES, TEST_DATA
from streamlit.testing.v1 import AppTest

from analysis.facts import gather
from analysis.rules.recommend import recommend
from analysis.rules.track_record_h200 import TRACK_RECORD
from analysis.text import ms
from collectors.calibrate import main as calibrate
from collectors.ingest import ingest
from data.store import Store


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    d = tmp_path_factory.mktemp("recommendations")
    ingest([TEST_DATA / "cpu_mlp.pt.trace.json.gz"], data_dir=d, name="cpu")
    ingest([SAMPLES / "gpt_train_fp32_naive.pt.trace.json.gz"], data_dir=d, name="naive")
    ceilings = str(REPO / "data/samples/ceilings_h200.json")
    assert calibrate(["--data", str(d), "--import", ceilings]) == 0
    with dashboard_store(d):
        yield d


def test_cards_follow_the_ranking(store_dir: Path) -> None:
    s = Store(store_dir)
    run_id = s.resolve_run("naive")
    everything = recommend(gather(s, run_id))
    recs = [r for r in everything if not r.minor]
    minor = [r for r in everything if r.minor]
    assert recs, "the project's fp32 GPT-2 trace has findings"
    at = open_page("pages/recommendations.py", run_id)
    assert not at.error, [e.value for e in at.error]
    titles = [shown(h.value) for h in at.subheader]
    assert titles == [f"{i}. {r.title}" for i, r in enumerate(recs, 1)]
    # This small model (d=512) is host-bound without the profiler (a per-parameter
    # optimizer, launches): fp32 GEMM time it would cut is listed, as minor.
    assert {"small-batch", "fused-optimizer", "cuda-graphs"} <= {r.id for r in recs}
    assert {"mixed-precision", "tensor-core-alignment"} <= {r.id for r in minor}
    assert [c.value for c in at.code] == [r.fix for r in recs]
    body = " ".join(shown(m.value) for m in at.markdown)
    for r in recs:
        assert r.evidence[0] in body
        assert r.saving_basis in body  # how the saving follows from what the fix removes
    # Each card says how its estimate did on the measured H200 pairs (or that none has been).
    captions = [shown(c.value) for c in at.caption]
    for r in recs:
        assert r.track_record in captions
    record = TRACK_RECORD["fused-optimizer"]
    optimizer = next(r for r in recs if r.id == "fused-optimizer")
    assert f"Checked on {record.pairs} measured before/after pairs" in optimizer.track_record
    # …and, from those pairs' measured savings, the range this card's estimate is likely in.
    assert record.low_ratio is not None
    assert record.high_ratio is not None
    est = optimizer.est_saving_ms
    text = optimizer.track_record
    assert f"{record.low_ratio:.2f}–{record.high_ratio:.2f}× the estimate" in text
    assert (
        f"so this run's {ms(est)} is likely to measure {ms(max(record.low_ratio, 0) * est)} "
        f"to {ms(record.high_ratio * est)}."
    ) in text
    assert optimizer.likely_saving_ms == (
        max(record.low_ratio, 0) * est,
        record.high_ratio * est,
    )
    # The ranking's table and each card give that range too; a finding without one, a dash.
    ranked = next(d.value for d in at.dataframe if "likely" in d.value.columns)
    assert list(ranked["id"]) == [r.id for r in recs]
    assert list(ranked["recommendation"]) == titles
    for r, shown_range in zip(recs, ranked["likely"], strict=True):
        low_high = r.likely_saving_ms
        assert shown_range == (
            "—" if low_high is None else f"{ms(low_high[0])} – {ms(low_high[1])}"
        )
    assert f"likely {ms(optimizer.likely_saving_ms[0])} – " in " ".join(captions)
    # A card whose likely saving overlaps a higher-ranked one's says which saves more is
    # uncertain (D88), and the table names those ranks.
    assert optimizer.close_to == ("small-batch",)
    assert [shown(i.value) for i in at.info] == [r.close_call for r in recs if r.close_call]
    ids = [r.id for r in recs]
    assert list(ranked["close to"]) == [
        ", ".join(f"#{ids.index(i) + 1}" for i in r.close_to) for r in recs
    ]
    listed = next(d.value for d in at.dataframe if "recommendation" in d.value.columns
                  and set(d.value["id"]) == {r.id for r in minor})  # fmt: skip
    assert len(listed) == len(minor)


def test_a_run_without_findings_says_so(store_dir: Path) -> None:
    at = open_page("pages/recommendations.py", Store(store_dir).resolve_run("cpu"))
    assert not at.error
    assert "None of the" in at.success[0].value


def test_roofline_opens_on_the_linked_ops(store_dir: Path) -> None:
    s = Store(store_dir)
    run_id = s.resolve_run("naive")
    r = next(r for r in recommend(gather(s, run_id)) if r.id == "mixed-precision")
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
    at.session_state["run"] = run_id
    at.run()
    at.query_params["ops"] = list(r.ops)
    at.switch_page("pages/roofline.py").run()
    assert not at.exception
    points = next(b for b in at.selectbox if b.label == "Points per")
    assert points.value == "op"
    table = at.dataframe[0].value
    assert set(table["name"]) == set(r.ops)
