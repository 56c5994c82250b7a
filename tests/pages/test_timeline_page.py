"""The Timeline page under AppTest on real traces: what it hands the browser component (lanes,
slices, budget, steps, links, search), checked against the raw JSON and the store; zooming
and selecting as the component reports them (its value in the session state)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs

import pytest
from helpers.pages import open_page, page_runs, timeline_payload
from helpers.paths import SAMPLES, TEST_DATA, fixture
from helpers.raw_ops import raw_link, raw_name_matches, raw_op_kernels, raw_ops
from helpers.raw_trace import raw_rank
from streamlit.testing.v1 import AppTest

NAIVE = fixture("h200/train_gpt2_fp32_naive.pt.trace.json.gz")  # 6 k GPU, 29 k CPU slices
LARGEST = fixture("h200/hf_llama_generate_b4.pt.trace.json.gz")  # 38 k GPU activities
DDP = SAMPLES / "ddp_gpt_bf16_2rank"
CPU_ONLY = TEST_DATA / "cpu_mlp.pt.trace.json.gz"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[Path, str]]:
    yield from page_runs(tmp_path_factory, (NAIVE, LARGEST, DDP, CPU_ONLY))


def zoom(
    at: AppTest, run_id: str, t0_us: float, t1_us: float, seq: int, sel: object = None
) -> None:
    """What the component sends after a wheel zoom, a drag or a click."""
    at.session_state[f"tl_{run_id}"] = {"t0": t0_us, "t1": t1_us, "seq": seq, "sel": sel}
    at.run()
    assert not at.exception


def test_the_whole_run_holds_every_gpu_activity_and_the_threads(runs: dict[Path, str]) -> None:
    at = open_page("pages/timeline.py", runs[NAIVE])
    p = timeline_payload(at)
    raw = raw_rank(NAIVE)
    assert f"{raw.kernels + raw.memcpy + raw.memset:,} GPU activities" in p["status"]
    kinds = [lane["kind"] for lane in p["lanes"]]
    assert kinds == ["cpu", "cpu", "gpu"]  # the main and autograd threads above the stream
    assert [s["label"] for s in p["steps"]] == [f"step {n}" for n in sorted(raw.steps)]
    # every GPU activity is drawn; the CPU slices a pixel long
    assert len(p["gpu"]["lane"]) == raw.kernels + raw.memcpy + raw.memset
    assert "zoom in for the rest" in p["status"]
    classes = {p["classes"][c] for c in p["gpu"]["cls"]}
    assert {"gemm", "elementwise", "softmax", "memcpy", "memset"} <= classes


def test_a_large_run_stays_within_the_cap_until_the_window_is_narrow(
    runs: dict[Path, str],
) -> None:
    at = open_page("pages/timeline.py", runs[LARGEST])
    p = timeline_payload(at)
    assert p["grid"] is not None  # 38 k activities: a busy grid behind the longest
    zoom(at, runs[LARGEST], p["span"][1] / 2, p["span"][1] / 2 + 2_000.0, 1)
    narrow = timeline_payload(at)
    assert narrow["window"] == pytest.approx([p["span"][1] / 2, p["span"][1] / 2 + 2_000], abs=1e-3)
    assert narrow["answers"] == 1
    assert narrow["status"].endswith("in the window, each drawn")
    assert narrow["grid"] is None


def test_selecting_a_kernel_links_its_launch_and_op(runs: dict[Path, str]) -> None:
    at = open_page("pages/timeline.py", runs[NAIVE])
    p = timeline_payload(at)
    g = p["gpu"]
    i = max(range(len(g["lane"])), key=lambda k: g["dur"][k])  # the longest kernel
    sel = {"lane": "gpu", "kind": "gpu", "rank": 0, "link": g["link"][i], "ts": g["ts"][i],
           "dur": g["dur"][i], "name": p["names"][g["name"][i]]}  # fmt: skip
    zoom(at, runs[NAIVE], *p["window"], seq=1, sel=sel)
    linked = at.dataframe[0].value.set_index("role")
    raw = raw_link(NAIVE, g["link"][i])
    assert linked.loc["kernel", "name"] == raw.kernel
    assert linked.loc["launch", "name"] == raw.launch
    assert linked.loc["op", "name"] == raw.op
    assert json.loads(linked.loc["op", "input shapes"]) == json.loads(raw.op_dims)
    links = timeline_payload(at)["highlight"]
    assert len(links["boxes"]) == 3
    assert len(links["flows"]) == 1  # launch -> kernel
    assert links["flows"][0]["to_ts"] == g["ts"][i]


def test_selecting_an_op_lists_its_kernels(runs: dict[Path, str]) -> None:
    at = open_page("pages/timeline.py", runs[NAIVE])
    whole = timeline_payload(at)
    # short ops are drawn once the window is narrow: 20 ms in the middle of the run
    zoom(at, runs[NAIVE], whole["span"][1] / 2, whole["span"][1] / 2 + 20_000, 1)
    p = timeline_payload(at)
    c = p["cpu"]
    ops = [
        k for k in range(len(c["lane"]))
        if p["cpu_kinds"][c["kind"][k]] == "op" and c["link"][k] in raw_op_kernels(NAIVE)
    ]  # fmt: skip
    assert ops, "the window holds ops that launched GPU work"
    k = ops[0]
    sel = {"lane": "cpu", "kind": "op", "rank": 0, "link": c["link"][k], "ts": c["ts"][k],
           "dur": c["dur"][k], "name": p["names"][c["name"][k]]}  # fmt: skip
    zoom(at, runs[NAIVE], *p["window"], seq=2, sel=sel)
    kernels = at.dataframe[0].value
    assert dict(kernels["name"].value_counts()) == dict(raw_op_kernels(NAIVE)[c["link"][k]])
    assert len(timeline_payload(at)["highlight"]["boxes"]) == len(kernels)


def test_search_counts_and_outlines_the_matches(runs: dict[Path, str]) -> None:
    at = open_page("pages/timeline.py", runs[NAIVE])
    at.text_input[0].set_value("softmax").run()
    hits = next(b for b in at.selectbox if "slices match" in b.label)
    assert hits.label.startswith(f"{raw_name_matches(NAIVE, 'softmax'):,} slices match")
    assert timeline_payload(at)["search"] == "softmax"
    hits.set_value(0).run()
    p = timeline_payload(at)
    assert p["selected"]["name"].lower().find("softmax") >= 0
    assert p["window"][1] - p["window"][0] < p["span"][1] / 10  # it opened on the hit


def test_a_recommendation_link_opens_its_window_and_outlines_its_kernels(
    runs: dict[Path, str],
) -> None:
    at = AppTest.from_file(str(Path(__file__).parents[2] / "app.py"), default_timeout=120)
    name = "void at::native::(anonymous namespace)::softmax_warp_forward<float, float, float, 10>"
    at.query_params.update(
        run=runs[NAIVE], t0_ns="0", t1_ns="0", highlight=name, rec="fused-attention"
    )
    at.session_state["run"] = runs[NAIVE]
    at.run()
    at.switch_page("pages/timeline.py").run()
    assert not at.exception
    assert "behind the recommendation fused-attention" in at.caption[0].value
    assert timeline_payload(at)["highlight"]["names"] == [name[:59] + "…"]


def test_every_rank_has_its_threads_above_its_streams(runs: dict[Path, str]) -> None:
    p = timeline_payload(open_page("pages/timeline.py", runs[DDP]))
    ranks = [(lane["rank"], lane["kind"]) for lane in p["lanes"]]
    assert sorted({r for r, _ in ranks}) == [0, 1]
    for rank in (0, 1):
        mine = [k for r, k in ranks if r == rank]
        assert mine == sorted(mine)  # "cpu" lanes before "gpu" lanes
        assert "gpu" in mine
        assert "cpu" in mine


def test_a_cpu_only_run_shows_its_threads(runs: dict[Path, str]) -> None:
    p = timeline_payload(open_page("pages/timeline.py", runs[CPU_ONLY]))
    assert {lane["kind"] for lane in p["lanes"]} == {"cpu"}
    assert p["gpu"]["lane"] == []
    assert "0 GPU activities" in p["status"]


def test_the_recommendations_link_carries_its_kernels(runs: dict[Path, str]) -> None:
    at = open_page("pages/recommendations.py", runs[NAIVE])
    links = [p.proto for p in at.get("page_link") if p.proto.page == "timeline"]
    assert links
    for link in links:
        query = parse_qs(link.query_string)
        assert query["run"] == [runs[NAIVE]]
        assert query["rec"][0]
        names = query["highlight"]
        assert names
        assert len(names) == len(set(names))
        assert set(names) <= set(raw_ops(NAIVE).kernel_ns)  # kernels that ran in this run
