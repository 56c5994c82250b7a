"""The pages with hostile content and faults, under AppTest: a user's strings reach Markdown
only escaped, a second dashboard on one store and a bad tag are one line, and an upload keeps
every file and takes any run name. (tests/browser/test_hostile_browser.py reads the same
pages back from a real browser.)"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from helpers.hostile import MARKUP, markup_trace
from helpers.pages import chart_specs, dashboard_store, open_page, shown
from helpers.paths import REPO, SAMPLES
from streamlit.testing.v1 import AppTest

from collectors.ingest import ingest
from data.store import Store

SAMPLE = SAMPLES / "gpt_train_bf16.pt.trace.json.gz"
DDP = SAMPLES / "ddp_gpt_bf16_2rank"
# What Markdown would make of MARKUP unescaped: an image, a link, an HTML tag, emphasis.
UNESCAPED = re.compile(r"(?<!\\)(!\[|\]\(|<img|\*\*bold\*\*)")


def app() -> AppTest:
    return AppTest.from_file(str(REPO / "app.py"), default_timeout=120)


@pytest.fixture
def hostile_run(tmp_path: Path) -> tuple[Path, str]:
    d = tmp_path / "store"
    run_id = ingest([SAMPLE], data_dir=d, name=MARKUP, tags={"note": MARKUP})
    return d, run_id


def test_a_hostile_run_name_is_escaped_everywhere_it_is_markdown(
    hostile_run: tuple[Path, str],
) -> None:
    d, run_id = hostile_run
    with dashboard_store(d):
        at = open_page("pages/overview.py", run_id)
        title = at.title[0].value
        assert shown(title) == MARKUP
        assert not UNESCAPED.search(title), title
        # every Markdown element of the page: no unescaped markup from the name
        texts = [e.value for kind in ("markdown", "caption", "warning") for e in at.get(kind)]
        assert not [t for t in texts if UNESCAPED.search(str(t))]
        runs = open_page("pages/runs.py")
        assert not runs.exception
        assert MARKUP in runs.dataframe[0].value["name"].tolist()  # a table: text as is


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


@pytest.mark.parametrize("page", ["pages/compare.py"])
def test_chart_texts_are_escaped_for_plotly(page: str, tmp_path: Path) -> None:
    """Plotly reads <a href>, <b> and <br> in labels and hovers: run names (the comparison's
    legend) reach it with < > & as entities. (The timeline draws names on a canvas with
    fillText, which reads no markup; tests/browser/test_hostile_browser.py reads it back.)"""
    d = tmp_path / "store"
    run_id = ingest([markup_trace(tmp_path)], data_dir=d, name=MARKUP)
    ingest([SAMPLE], data_dir=d, name=MARKUP)
    with dashboard_store(d):
        at = open_page(page, run_id)
    texts = list(_strings(chart_specs(at)[0]["data"]))
    assert [t for t in texts if "&lt;img" in t]
    assert not [t for t in texts if "<img" in t]


def test_a_second_dashboard_on_the_same_store_is_one_line(
    hostile_run: tuple[Path, str],
) -> None:
    d, _ = hostile_run
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(d)], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "open\n"
        with dashboard_store(d):
            at = app().run()
    finally:
        holder.kill()
        holder.wait()
    assert not at.exception
    assert [shown(e.value) for e in at.error] == [
        f"{d / 'dashboard.duckdb'}: the store is in use by another dashboard (pid "
        f"{holder.pid}); open that one, or start this one with DASH_DATA set to another folder"
    ]


HOLD = """
import sys, time
from data.store import Store
store = Store(sys.argv[1], owner=True)  # held while this process lives
print("open", flush=True)
time.sleep(120)
"""


def test_a_tag_that_is_not_a_number_on_the_roofline(hostile_run: tuple[Path, str]) -> None:
    """A store written before ingest checked tags may hold tokens_per_step=abc."""
    d, run_id = hostile_run
    segment = d / "lake" / "runs" / f"run_id={run_id}" / "data.parquet"
    runs = pq.read_table(segment)
    tags = runs.column("tags").to_pylist()
    tags[0] = '{"tokens_per_step": "abc"}'
    pq.write_table(runs.set_column(runs.schema.get_field_index("tags"), "tags", [tags]), segment)
    with dashboard_store(d):
        at = open_page("pages/roofline.py", run_id)
    assert [shown(w.value) for w in at.warning if "tokens_per_step" in w.value] == [
        "Tag tokens_per_step=abc is not a positive number of tokens: no tokens/s."
    ]
    assert [m.value for m in at.metric if m.label == "Tokens/s"] == ["—"]


def test_upload_keeps_two_files_of_one_name_and_a_name_like_a_flag(tmp_path: Path) -> None:
    d = tmp_path / "store"
    d.mkdir()
    with dashboard_store(d):
        at = app().run()
        at.switch_page("pages/upload.py").run()
        at.file_uploader[0].set_value(
            [
                ("trace.pt.trace.json.gz", (DDP / f"rank{r}.pt.trace.json.gz").read_bytes(), "x")
                for r in (0, 1)
            ]
        )
        at.text_input[0].set_value("--name=-x")
        at.button[0].click().run()
    assert not at.exception
    assert not at.error, [e.value for e in at.error]
    (run,) = Store(d).runs().to_dict("records")
    assert (run["name"], run["rank_count"]) == ("--name=-x", 2)
    assert shown(at.success[0].value).startswith("Run **--name=-x** (")
