"""The exploring views in Chromium on real traces (an H200 run, a foreign H100 run, a
with_stack run): names and values read back from the page, checked against the raw JSON
counted with the standard library (tests/helpers/raw_ops.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.browser import component_frame, dashboard, grid_header, grid_rows, settle
from helpers.paths import TEST_DATA, fixture
from helpers.raw_ops import raw_memory, raw_ops

from collectors.ingest import ingest
from data.demo import MARKER

pytestmark = pytest.mark.browser
NAIVE = fixture("h200/train_gpt2_fp32_naive.pt.trace.json.gz")
BERT = fixture("foreign/tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz")
STACK = TEST_DATA / "validation_h200/attention-gpt2-after-stack.pt.trace.json.gz"
ROW_PX = 35  # st.dataframe's row (and header) height


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[Path, str]]:
    d = tmp_path_factory.mktemp("explore-store")
    ids = {p: ingest([p], data_dir=d) for p in (NAIVE, BERT, STACK)}
    (d / MARKER).touch()
    return d, ids


@pytest.fixture(scope="module")
def server(store: tuple[Path, dict[Path, str]]) -> Iterator[str]:
    with dashboard(store[0]) as url:
        yield url


def open_page(browser: Any, url: str) -> Any:
    page = browser.new_page(viewport={"width": 2200, "height": 1200})
    page.goto(url)
    settle(page)
    assert page.get_by_test_id("stException").count() == 0
    return page


def canon(dims: str) -> str:
    return json.dumps(json.loads(dims)) if dims else ""


def test_the_ranking_fits_a_laptop_screen(
    server: str, store: tuple[Path, dict[Path, str]], browser: Any
) -> None:
    """At 1366 px, the narrowest common laptop screen, with the sidebar open, the ranking
    table shows every column without a horizontal scroll (at 1400 px its last column, the
    close calls', sat behind one)."""
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.goto(f"{server}/recommendations?run={store[1][NAIVE]}")
    settle(page)
    assert grid_header(page) == [
        "recommendation", "id", "saving", "likely", "% of step", "confidence", "close to"
    ]  # fmt: skip
    # the rank leads each title (its own column took the width the bars needed)
    ranks = [r[0].split(". ")[0] for r in grid_rows(page)]
    assert ranks == [str(i) for i in range(1, len(ranks) + 1)]
    scroller = page.get_by_test_id("stDataFrame").first.locator(".dvn-scroller")
    content_px, visible_px = scroller.evaluate("e => [e.scrollWidth, e.clientWidth]")
    assert content_px <= visible_px
    page.close()


@pytest.mark.parametrize("trace", [NAIVE, BERT], ids=["h200-naive", "h100-bert"])
def test_operators_show_the_raw_traces_ops(
    server: str, store: tuple[Path, dict[Path, str]], browser: Any, trace: Path
) -> None:
    page = open_page(browser, f"{server}/operators?run={store[1][trace]}")
    header = grid_header(page)
    rows = [dict(zip(header, r, strict=False)) for r in grid_rows(page)]
    raw = raw_ops(trace)
    top = sorted(raw.gpu_ns, key=lambda k: -raw.gpu_ns[k])[:3]
    for want, row in zip(top, rows, strict=False):
        assert (row["op"], canon(row["input shapes"])) == (want[0], canon(want[1]))
        assert int(row["calls"]) == raw.calls[want]
        assert float(row["GPU (ms)"]) == pytest.approx(raw.gpu_ns[want] / 1e6, abs=1e-5)
        assert float(row["CPU self (ms)"]) == pytest.approx(raw.cpu_self_ns[want] / 1e6, abs=1e-5)
    # selecting the first row lists the kernels those calls launched
    grid = page.get_by_test_id("stDataFrame").first.bounding_box()
    page.mouse.click(grid["x"] + 18, grid["y"] + ROW_PX * 1.5)
    page.get_by_text("Kernels launched").wait_for(timeout=60_000)
    settle(page)
    kernels = {r[0]: int(r[3]) for r in grid_rows(page, 1)}
    assert kernels == dict(raw.kernels[top[0]])
    page.close()


def test_operators_group_by_module(
    server: str, store: tuple[Path, dict[Path, str]], browser: Any
) -> None:
    page = open_page(browser, f"{server}/operators?run={store[1][STACK]}")
    page.get_by_text("module", exact=True).click()
    settle(page)
    header = grid_header(page)
    scopes = {r[0]: dict(zip(header, r, strict=False)) for r in grid_rows(page)}
    assert "GPT2Attention" in scopes
    assert "GPT2Attention (backward)" in scopes
    page.close()


@pytest.mark.parametrize("trace", [NAIVE, BERT], ids=["h200-naive", "h100-bert"])
def test_kernels_show_the_raw_traces_kernels(
    server: str, store: tuple[Path, dict[Path, str]], browser: Any, trace: Path
) -> None:
    page = open_page(browser, f"{server}/kernels?run={store[1][trace]}")
    raw = raw_ops(trace)
    metrics = page.get_by_test_id("stMetricValue").all_inner_texts()
    assert metrics[0] == f"{len(raw.kernel_ns):,}"
    assert metrics[1] == f"{sum(len(d) for d in raw.kernel_ns.values()):,}"
    header = grid_header(page, 1)
    rows = [dict(zip(header, r, strict=False)) for r in grid_rows(page, 1)]
    by_time = sorted(raw.kernel_ns, key=lambda n: -sum(raw.kernel_ns[n]))
    for name, row in zip(by_time[:5], rows, strict=False):
        assert row["kernel"] == name
        assert int(row["calls"]) == len(raw.kernel_ns[name])
        assert float(row["total (ms)"]) == pytest.approx(sum(raw.kernel_ns[name]) / 1e6)
    page.close()


@pytest.mark.parametrize("trace", [NAIVE, BERT], ids=["h200-naive", "h100-bert"])
def test_memory_shows_the_peak_and_its_owners(
    server: str, store: tuple[Path, dict[Path, str]], browser: Any, trace: Path
) -> None:
    page = open_page(browser, f"{server}/memory?run={store[1][trace]}")
    raw = raw_memory(trace)
    metrics = page.get_by_test_id("stMetricValue").all_inner_texts()
    number, unit = metrics[0].split()
    scale = {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30}[unit]
    assert float(number.replace(",", "")) == pytest.approx(raw.peak_allocated / scale, abs=0.05)
    assert page.locator(".js-plotly-plot").count() == 1
    header = grid_header(page, 0)
    rows = [dict(zip(header, r, strict=False)) for r in grid_rows(page, 0)]
    top_op, top_bytes = raw.alive_by_op.most_common(1)[0]
    assert rows[0]["allocated by op"] == (top_op or "")
    assert float(rows[0]["live (GiB)"]) == pytest.approx(top_bytes / 2**30)
    page.close()


def test_compare_says_why_the_pair_and_how_it_differs(
    server: str, store: tuple[Path, dict[Path, str]], browser: Any
) -> None:
    from analysis.compare import compare_runs
    from data.store import Store

    # no two runs share a name: the two newest, BERT (H100, inference) and the H200 run
    page = open_page(browser, f"{server}/compare")
    c = compare_runs(Store(store[0]), store[1][BERT], store[1][STACK])
    assert page.get_by_text("no two runs share a name").count() == 1
    alerts = page.get_by_test_id("stAlert").all_inner_texts()
    for difference in c.differences:
        assert any(difference in a for a in alerts), difference
    assert any("Different devices" in a for a in alerts)
    labels = [t.strip() for t in page.get_by_test_id("stMetric").all_inner_texts()]
    assert [t.splitlines()[0] for t in labels[:3]] == ["Step time", "Tokens/s", "MFU"]
    # Streamlit's Markdown draws "->" as an arrow
    assert page.get_by_text(c.verdict.replace("->", "→")).count() == 1
    page.close()


def wheel_step(page: Any, frame: Any, x: float, y: float) -> None:
    """One wheel notch towards the pointer, then wait for the new window's detail."""
    before = frame.evaluate("window.timeline.timings.length")
    page.mouse.move(x, y)
    page.mouse.wheel(0, -500)
    frame.wait_for_function(f"window.timeline.timings.length > {before}", timeout=60_000)


# The widest kernel on screen: its centre on the canvas and its correlation id.
WIDEST_GPU_HIT = """() => { const t = window.timeline;
    const g = t.hits.filter(h => h[4] === 'gpu').sort((a, b) => b[2] - a[2])[0];
    return {x: g[0] + g[2] / 2, y: g[1] + g[3] / 2, link: t.args.gpu.link[g[5]]}; }"""


def _raw_lanes(trace: Path) -> tuple[set[str], set[str]]:
    """(the GPU streams with activity, the CPU threads with any slice) as the timeline labels
    them, from the raw JSON: a Kineto GPU event's tid is its stream."""
    from helpers.raw_trace import KERNEL_CATS, MEMCPY_CATS, MEMSET_CATS, load_trace_json
    from helpers.raw_trace import trace_events as events

    xs = [e for e in events(load_trace_json(trace)) if isinstance(e, dict) and e.get("ph") == "X"]
    gpu = (*KERNEL_CATS, *MEMCPY_CATS, *MEMSET_CATS)
    return (
        {f"rank 0 · stream {e['tid']} gpu" for e in xs if e.get("cat") in gpu},
        {f"rank 0 · thread {e['tid']} cpu" for e in xs if e.get("cat") not in gpu},
    )


@pytest.mark.parametrize("trace", [NAIVE, BERT], ids=["h200-naive", "h100-bert"])
def test_timeline_zooms_in_the_browser_and_links_a_kernel_to_its_launch(
    server: str, store: tuple[Path, dict[Path, str]], browser: Any, trace: Path
) -> None:
    from helpers.raw_ops import raw_link
    from helpers.raw_trace import raw_rank

    page = open_page(browser, f"{server}/timeline?run={store[1][trace]}")
    frame = component_frame(page)
    raw = raw_rank(trace)
    status = frame.locator("#status").inner_text()
    assert f"{raw.kernels + raw.memcpy + raw.memset:,} GPU activities" in status
    lanes = frame.evaluate("window.timeline.lanes.map(l => l.label + ' ' + l.kind)")
    streams, threads = _raw_lanes(trace)
    assert {lane for lane in lanes if lane.endswith(" gpu")} == streams
    cpu = [lane for lane in lanes if lane.endswith(" cpu")]
    assert cpu
    assert set(cpu) <= threads
    # the CPU threads above the GPU streams
    assert lanes == cpu + [lane for lane in lanes if lane.endswith(" gpu")]
    if trace == NAIVE:  # the H200 run's two threads, as its JSON holds them
        assert cpu == ["rank 0 · thread 489 cpu", "rank 0 · thread 522 cpu"]
    box = frame.locator("canvas").bounding_box()
    # zoom towards the widest GPU slice drawn: a window with kernels in it on any trace
    widest = frame.evaluate(WIDEST_GPU_HIT)
    x, y = box["x"] + widest["x"], box["y"] + 40
    span = frame.evaluate("window.timeline.view[1] - window.timeline.view[0]")
    for _ in range(8):  # each notch keeps exp(-0.75) = 47 % of the window
        wheel_step(page, frame, x, y)
    view = frame.evaluate("window.timeline.view")
    assert view[1] - view[0] < span / 20
    assert "each drawn" in frame.locator("#status").inner_text()
    # names are written on the slices wide enough to hold them, and they are the slices'
    names = frame.locator("#labels li").all_inner_texts()
    assert names
    assert set(names) <= set(frame.evaluate("window.timeline.args.names"))
    # click the widest kernel on screen: its launch call and op are listed below
    hit = frame.evaluate(WIDEST_GPU_HIT)
    page.mouse.click(box["x"] + hit["x"], box["y"] + hit["y"])
    page.get_by_text("Selected", exact=True).wait_for(timeout=60_000)
    settle(page)
    rows = {r[0]: r[1] for r in grid_rows(page, 0)}
    want = raw_link(trace, hit["link"])
    assert rows == {"kernel": want.kernel, "launch": want.launch, "op": want.op}
    page.close()


@pytest.mark.parametrize("name", ["overview", "breakdown", "kernels", "roofline", "memory"])
def test_charts_draw_with_the_basic_bundle_in_the_theme(
    server: str, store: tuple[Path, dict[Path, str]], browser: Any, name: str
) -> None:
    """A run's chart is drawn by plotly.js's basic bundle (pages/_chart.py), never by
    Streamlit's 4.7 MB Plotly chunk, in the theme's text colour on a clear background."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    fetched: list[str] = []
    page.on("request", lambda r: fetched.append(r.url))
    page.goto(f"{server}/{name}?run={store[1][NAIVE]}")
    settle(page)
    assert page.get_by_test_id("stException").count() == 0
    assert [u.rsplit("/", 1)[-1] for u in fetched if "plotly" in u.lower()] == [
        "plotly-basic.min.js"
    ]
    chart = page.locator(".dash-chart").first
    assert chart.locator(".xtick").count() > 0
    text_colour = page.evaluate(
        "() => getComputedStyle(document.querySelector('.dash-chart')).getPropertyValue("
        "'--st-text-color')"
    )
    tick_fill = chart.locator(".ytick text").first.evaluate("t => t.style.fill")
    assert tick_fill == _rgb(text_colour)
    paper = chart.locator("rect.bg").first.evaluate("r => r.style.fillOpacity")
    assert paper == "0"  # the page's own background shows through
    page.close()


def _rgb(hex_colour: str) -> str:
    h = hex_colour.strip().lstrip("#")
    return "rgb({}, {}, {})".format(*(int(h[i : i + 2], 16) for i in (0, 2, 4)))
