"""Every page under Streamlit's AppTest, on a real store holding a real ingested trace."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.pages import chart_specs, dashboard_store, shown
from helpers.paths import REPO, SAMPLES
from streamlit.testing.v1 import AppTest

from analysis.facts import Facts
from analysis.load import load_host, load_run
from collectors.ingest import ingest
from data import demo
from data.store import Store
from pages._ui import fmt_ms

SAMPLE = SAMPLES / "gpt_train_bf16.pt.trace.json.gz"
OTHER = SAMPLES / "decode_b1_eager.pt.trace.json.gz"


def registered_pages() -> list[str]:
    """The page files app.py registers with st.Page (the registry, not a folder glob)."""
    tree = ast.parse((REPO / "app.py").read_text())
    return [
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and getattr(node.func, "attr", "") == "Page"
        and isinstance(node.args[0], ast.Constant)
    ]


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    d = tmp_path_factory.mktemp("store")
    ingest([SAMPLE], data_dir=d)
    with dashboard_store(d):
        yield d


def app() -> AppTest:
    return AppTest.from_file(str(REPO / "app.py"), default_timeout=120)


def test_registry_lists_every_page_file() -> None:
    files = {f"pages/{p.name}" for p in (REPO / "pages").glob("*.py") if not p.name.startswith("_")}
    assert set(registered_pages()) == files


@pytest.mark.parametrize("page", registered_pages())
def test_page_renders_without_exception(store_dir: Path, page: str) -> None:
    at = app().run()
    at.switch_page(page).run()
    assert not at.exception
    assert not at.error


def test_runs_page_lists_the_run(store_dir: Path) -> None:
    at = app().run()
    table = at.dataframe[0].value
    run = Store(store_dir).runs().iloc[0]
    assert run["run_id"] in set(table["run id"])
    assert table.loc[table["run id"] == run["run_id"], "kernels"].iloc[0] == run["kernel_count"]


def test_overview_matches_the_store(store_dir: Path) -> None:
    s = Store(store_dir)
    run_id = s.runs().iloc[0]["run_id"]
    kernels, top_ns = s.query(
        "SELECT count(*), max(t) FROM (SELECT name, sum(dur_ns) t, count(*) c FROM gpu_events "
        "WHERE run_id = ? AND kind = 'kernel' GROUP BY name) q "
        "CROSS JOIN (SELECT count(*) FROM gpu_events WHERE run_id = ? AND kind = 'kernel')",
        [run_id, run_id],
    ).iloc[0]
    n_kernels = int(
        s.query(
            "SELECT count(*) n FROM gpu_events WHERE run_id = ? AND kind = 'kernel'", [run_id]
        ).iloc[0]["n"]
    )
    at = app()
    at.session_state["run"] = run_id
    at.run()
    at.switch_page("pages/overview.py").run()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Kernels"] == f"{n_kernels:,}"
    assert metrics["Ranks"] == "1"
    assert metrics["Steps"] == "3"  # schedule(wait=1, warmup=1, active=3)
    top = at.dataframe[0].value
    assert len(top) == 10
    assert top["total_ms"].iloc[0] == pytest.approx(float(top_ns) / 1e6)
    assert kernels > 10
    # The steps chart: one bar per (profiled) step, and the unprofiled step as a line, so the
    # bars are not read as the job's speed.
    (steps,) = chart_specs(at)
    assert [t["type"] for t in steps["data"]] == ["bar"]
    model = Facts(load_run(s, run_id), load_host(s, run_id)).step_model
    assert model is not None
    (line,) = steps["layout"]["shapes"]
    assert line["y0"] == line["y1"] == pytest.approx(model.unprofiled_ms)
    assert metrics["Step, unprofiled"] == fmt_ms(model.unprofiled_ms)
    assert "GPU busy, profiled" in metrics  # the caption gives the unprofiled share
    # G and H overlap: the caption says which sets the pace and what stands still on top.
    (caption,) = [c.value for c in at.caption if c.value.startswith("The profiler added")]
    pace = "host's" if model.host_ms >= model.gpu_ms else "GPU's"
    assert f"host work {fmt_ms(model.host_ms)} and GPU work {fmt_ms(model.gpu_ms)}" in caption
    assert f"the {pace} sets the pace" in caption
    assert (f"both stand still {fmt_ms(model.serial_ms)} more" in caption) == (model.serial_ms > 0)


def test_upload_ingests_a_trace(store_dir: Path) -> None:
    before = len(Store(store_dir).runs())
    at = app().run()
    at.switch_page("pages/upload.py").run()
    # A browser sends the chosen file with the click, so the test does too (one run).
    at.file_uploader[0].set_value((OTHER.name, OTHER.read_bytes(), "application/gzip"))
    at.button[0].click().run()
    assert not at.exception
    assert not at.error, [e.value for e in at.error]
    runs = Store(store_dir).runs()
    assert len(runs) == before + 1
    new = runs.iloc[0]
    # the name as written, one rank, no "(s)"
    assert shown(at.success[0].value).startswith(
        f"Run **decode_b1_eager** (`{new['run_id']}`): 1 rank, {new['kernel_count']:,} kernels"
    )
    # its overview names the file as uploaded, not the temporary folder it was read from
    at.session_state["run"] = new["run_id"]
    at.switch_page("pages/overview.py").run()
    caption = shown(at.caption[0].value)
    assert f"{new['run_id']} · file: {OTHER.name} · ingested 20" in caption
    assert "upload-" not in caption


def test_upload_rejects_bad_input_and_keeps_the_store(store_dir: Path) -> None:
    s = Store(store_dir)
    before = s.checksums()
    at = app().run()
    at.switch_page("pages/upload.py").run()
    at.file_uploader[0].set_value(("notes.json", b"this is not json", "application/json"))
    at.button[0].click().run()
    assert not at.exception
    assert len(at.error) == 1
    # the reason names the file as the user chose it, not its temporary copy
    reason = shown(at.error[0].value)
    assert reason.startswith("notes.json: not JSON")
    assert "upload-" not in reason
    assert s.checksums() == before


def test_empty_store_says_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DASH_DATA", str(tmp_path))
    Store(tmp_path).close()
    (tmp_path / demo.MARKER).touch()
    at = app().run()
    assert not at.exception
    assert "No runs yet" in at.info[0].value
    at.switch_page("pages/overview.py").run()
    assert not at.exception
    assert "No runs yet" in at.info[0].value


def test_first_start_loads_the_demo_set_beside_a_run_already_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a store without the demo marker that already holds one demo trace
    first = ingest([SAMPLE], data_dir=tmp_path)
    monkeypatch.setenv("DASH_DATA", str(tmp_path))
    # WHEN the dashboard starts THEN the rest of the demo set is loaded, the duplicate skipped
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=300).run()
    assert not at.exception
    assert not at.error, [e.value for e in at.error]
    assert (tmp_path / demo.MARKER).exists()
    s = Store(tmp_path)
    runs = s.runs()
    assert len(runs) == len(demo.traces())
    assert first in set(runs["run_id"])
    assert s.query("SELECT count(*) n FROM ceilings").iloc[0]["n"] > 0
    assert s.query("SELECT count(*) n FROM gpu_samples WHERE host = 'demo'").iloc[0]["n"] > 0
