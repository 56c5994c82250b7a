"""Streamlit glue shared by the pages: the store, the run picker, ingest jobs, errors.

Ingest runs in a child process (`python -m collectors.ingest`, through data.cli_child), the
same path as the CLI: the dashboard stays responsive, a crash in a parser cannot take it
down, and the memory of a 2 GB parse goes back to the system when the child exits. Its
result and its errors come back typed (--json), so nothing here reads an error's wording.
"""

from __future__ import annotations

import ast
import importlib
import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pandas as pd
import streamlit as st
from streamlit.logger import get_logger

from analysis.facts import Facts, gather
from analysis.rank_sample import sample_text
from analysis.specs import match_spec
from analysis.step_model import BASIS
from analysis.text import clip, printable
from data import demo
from data.cli_child import ingest_child
from data.errors import DashError, error_text
from data.store import Store, dashboard_data_dir

if TYPE_CHECKING:
    from analysis.rules.recommend import Recommendation


@st.cache_resource(show_spinner=False)
def _store(path: str) -> Store:
    return Store(path, owner=True)


def _use_app_navigation() -> None:
    """Route every first visit through app.py's st.navigation.

    With a pages/ folder beside app.py, Streamlit 1.67 starts in its legacy multipage mode
    and, for a first visit straight to /overview, runs pages/overview.py without app.py (no
    page registry, no layout, helper modules listed as pages) until some run calls
    st.navigation. Leaving that mode and rerunning makes the URL resolve through app.py.
    Once per session: a rerun drops that run's widget events, which only the first load of a
    session can afford.
    """
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory and not st.session_state.get("_rerouted"):
        st.session_state["_rerouted"] = True
        PagesManager.uses_pages_directory = False
        st.rerun()


def store() -> Store:
    """The dashboard's store (one per server process), with the demo runs on first start."""
    _use_app_navigation()
    s = _store(str(dashboard_data_dir()))
    _ensure_demo(s)
    return s


def _ensure_demo(s: Store) -> None:
    """First visit to a store `make demo` did not prepare: load the demo set, step by step."""
    if not demo.pending(s.data_dir):
        return
    with st.status("First start: loading the demo data…", expanded=False) as status:
        demo.load(s.data_dir, status.write)
        status.update(label="Demo data ready", state="complete")


# A run never changes after ingest; the ttl picks up newly imported ceilings. The facts memo
# their derived frames, so the pages of one run share the work.
# Runs kept per cache: at 4, the demo set plus one upload evicted a run each time the user came
# back to it (its Operators 0.03 -> 1.2 s, Report -> 1.3 s at 1.3 M events, D75). A run of
# 1.3 M events holds ~0.4 GB here (facts 174 MB, op tree 215 MB); the ttl lets them go.
RUNS_CACHED = 8


@st.cache_resource(show_spinner="Reading the run…", ttl=600, max_entries=RUNS_CACHED)
def _facts(path: str, run_id: str) -> Facts:
    return gather(_store(path), run_id)


@st.cache_resource(show_spinner="Modelling the run's work…", ttl=600, max_entries=RUNS_CACHED)
def _facts_with_spec(path: str, run_id: str, spec_name: str) -> Facts:
    return _facts(path, run_id).with_spec(match_spec(None, spec_name))


def _page_imports() -> list[str]:
    """The modules the page files import (pages/*.py, read, not run), but the pages' own: a
    Streamlit component registers only when declared inside a script run (the timeline's)."""
    names = set()
    for page in Path(__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(page.read_text())):
            if isinstance(node, ast.Import):
                names |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
    return sorted(n for n in names if n.split(".")[0] != "pages")


def warm_up() -> None:
    """Before the first visit (serve.py): the pages' modules imported, the store opened and
    the newest run's rules run, into this process's caches. Best effort: a failure is logged
    and left for the page that needs the value to show."""
    log = get_logger(__name__)
    # No session yet, so no spinner to draw: Streamlit's warning about that says nothing here.
    quiet = get_logger("streamlit.runtime.scriptrunner_utils.script_run_context")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    started = time.monotonic()
    try:
        for module in _page_imports():
            importlib.import_module(module)
        path = str(dashboard_data_dir())
        runs = _store(path).runs()
        if not runs.empty:
            ranked(str(runs.iloc[0]["run_id"]))
        log.info("warmed up in %.1f s (%d runs)", time.monotonic() - started, len(runs))
    except DashError as e:  # the page that reads the store says it too, on the page
        log.warning("warm-up stopped: %s", error_text(e))
    except Exception:  # a warm-up must never stop the server: a bug's traceback, logged
        log.exception("warm-up failed")
    finally:
        quiet.setLevel(level)


def run_facts(run_id: str, spec_name: str | None = None) -> Facts:
    """One run's facts (analysis.facts), read once per server process and shared by pages;
    against the spec named `spec_name` when given (the Roofline page's override). Of a run
    of many ranks, a sample's (analysis.rank_sample): the page says which ranks."""
    if spec_name is not None:
        facts = _facts_with_spec(str(dashboard_data_dir()), run_id, spec_name)
    else:
        facts = _facts(str(dashboard_data_dir()), run_id)
    if facts.sample is not None:
        st.caption(md(sample_text(facts.sample.as_dict()), None))
    return facts


Behind = tuple[pd.DataFrame, int | None]  # a finding's kernels, and how many there are


# Cached as the facts are (a run never changes after ingest; the ttl picks up new ceilings).
@st.cache_data(show_spinner="Running the rules…", ttl=600, max_entries=16)
def ranked(run_id: str) -> tuple[str, list[Recommendation], list[Behind]]:
    """The run's step basis, its recommendations and the kernels behind each (the
    Recommendations page's; warm_up runs it for the newest run)."""
    from analysis.rules.recommend import kernels_behind, recommend  # 0.7 s: where needed

    facts = run_facts(run_id)
    recs = recommend(facts)
    model = facts.step_model
    basis = (
        f"Median step {fmt_ms(facts.step_ms)} without the profiler, {BASIS[model.source]}; "
        f"{fmt_ms(model.profiled_ms)} profiled"
        if model is not None
        else f"Median step {fmt_ms(facts.step_ms)} on the trace's timeline"
    )
    return basis, recs, [kernels_behind(facts, r) for r in recs]


def run_ingest(
    paths: Sequence[Path],
    *,
    name: str | None,
    tags: Mapping[str, str] | None = None,
    on_progress: Callable[[str, float], None] | None = None,
) -> str:
    """Ingest traces in a child process; returns the run id or raises the typed DashError."""
    return ingest_child(
        paths, data_dir=dashboard_data_dir(), name=name, tags=tags, on_progress=on_progress
    ).run_id


# Every ASCII punctuation character: Markdown may read any of them as markup, and Streamlit
# adds its own ($ for LaTeX, :red[…] colours, :material/…: icons).
_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")
# Where the renderer's autolinker, which runs on the text after escapes are resolved, starts
# a link: "://", "www." and "@" (a mail address). An invisible word joiner there stops it.
_LINK_START = re.compile(r"(?<=:)(?=//)|(?<=www)(?=\.)|(?<=@)", re.IGNORECASE)
WORD_JOINER = "\u2060"
SHOWN_CHARS = 300  # a user's string is cut there on a page (a 1 MB kernel name, say)


def md(value: Any, limit: int | None = SHOWN_CHARS) -> str:
    """A user's string (a run, device, kernel or file name, a tag, an error message) for any
    Streamlit element that reads Markdown (title, caption, markdown, warning, expander
    labels, help): shown as written, on one line, cut to `limit` characters. Every
    punctuation character is backslash-escaped and a word joiner (U+2060, invisible) breaks
    every URL and mail address, so no image, link, HTML, emphasis or math comes out of it."""
    text = " ".join(printable(clip(str(value), limit)).split())
    return _PUNCTUATION.sub(r"\\\1", _LINK_START.sub(WORD_JOINER, text))


def show_error(e: BaseException) -> NoReturn:
    """The one place pages turn an error (a DashError, an OSError) into an error box: its one
    line, as written."""
    st.error(md(error_text(e), None), icon="🚫")
    st.stop()


def run_page(page: Any) -> None:
    """Run the page st.navigation picked; an error of the family, or of the file system,
    that a page did not handle becomes one error line (any other is a bug: it propagates,
    and the browser shows Streamlit's generic message, never a traceback:
    .streamlit/config.toml sets showErrorDetails = "none")."""
    try:
        page.run()
    except (DashError, OSError) as e:
        show_error(e)


def fmt_time_ns(unix_ns: float | None, ms: bool = False) -> str:
    """A Unix-ns time as a date and time in UTC (to the millisecond with `ms`: a caller
    showing a span of a few seconds), or an em dash."""
    if unix_ns is None or unix_ns != unix_ns:
        return "—"
    t = pd.Timestamp(int(unix_ns), unit="ns", tz="UTC")
    frac = f".{t.microsecond // 1000:03d}" if ms else ""
    return f"{t.strftime('%Y-%m-%d %H:%M:%S')}{frac} UTC"


def selected_run(s: Store) -> str | None:
    """The run picked in the sidebar (remembered in the URL as ?run=…), or None."""
    runs = s.runs()
    if runs.empty:
        st.info("No runs yet. Upload a torch.profiler trace on the Upload page.")
        return None
    ids = runs["run_id"].tolist()
    labels = run_labels(runs)
    wanted = st.session_state.get("run") or st.query_params.get("run")
    index = ids.index(wanted) if wanted in ids else 0
    run_id: str = st.sidebar.selectbox("Run", ids, index=index, format_func=labels.__getitem__)
    st.session_state["run"] = run_id
    st.query_params["run"] = run_id
    return run_id


def run_labels(runs: Any) -> dict[str, str]:
    """run id -> 'name · 12-01 12:22 · e7e3e0' (ingested, UTC; the id's random part) for a
    run picker (data.store.Store.runs' frame): short, since the sidebar cuts it at ~40
    characters; an option is plain text (no Markdown), cut and without control characters."""
    when = pd.to_datetime(runs["ingested_at_ns"], unit="ns", utc=True).dt.strftime("%m-%d %H:%M")
    return {
        str(i): f"{printable(clip(str(n), 80))} · {w} · {str(i).rsplit('-', 1)[-1]}"
        for n, i, w in zip(runs["name"], runs["run_id"], when, strict=True)
    }


def require_run() -> tuple[Store, str]:
    """The store and the run picked in the sidebar; stops the page when there is no run."""
    s = store()
    run_id = selected_run(s)
    if run_id is None:
        st.stop()
    return s, run_id


# Unit suffixes of the frames' column names (units in names, house style) as table headers.
_UNITS = (("_ms_per_step", " (ms per step)"), ("_ms", " (ms)"), ("_us", " (µs)"),
          ("_ns", " (ns)"), ("_pct", " (%)"), ("_bytes", " (bytes)"), ("_gbps", " (GB/s)"),
          ("_tflops", " (TFLOP/s)"))  # fmt: skip


def human_name(column: str) -> str:
    """A frame's column name as a table header: 'idle_wait_ms' -> 'idle wait (ms)'."""
    for suffix, unit in _UNITS:
        if column.endswith(suffix):
            return column.removesuffix(suffix).replace("_", " ") + unit
    return column.replace("_", " ")


# Above this many ranks a page shows one picked rank and the spread over all of them
# (analysis.ranks.spread) instead of a row, bar or lane per rank.
MANY_RANKS = 16


def rank_picker(ranks: list[int], key: str, outliers: list[int]) -> int | None:
    """The rank to show on a run of more than MANY_RANKS ranks (the first outlier unless
    the user picks another); None for a smaller run: every rank is shown."""
    if len(ranks) <= MANY_RANKS:
        return None
    first = ranks.index(outliers[0]) if outliers and outliers[0] in ranks else 0
    picked: int = st.selectbox(
        f"Rank (of {len(ranks)})",
        ranks,
        index=first,
        key=key,
        help="Outlier ranks (furthest from the median) are listed with the spread below.",
    )
    return picked


SHOWN_RANKS = 8  # the lanes of this many ranks by default, above MANY_RANKS


def ranks_picker(ranks: list[int], key: str) -> list[int] | None:
    """The ranks whose lanes to draw on a run of more than MANY_RANKS ranks (the first
    SHOWN_RANKS unless the user picks others, at most MANY_RANKS); None for a smaller run:
    every rank is drawn. Stops the page when none is picked."""
    if len(ranks) <= MANY_RANKS:
        return None
    picked: list[int] = st.multiselect(
        f"Ranks (of {len(ranks)})",
        ranks,
        default=ranks[: min(SHOWN_RANKS, MANY_RANKS)],
        max_selections=MANY_RANKS,
        key=key,
        help="Each rank's CPU threads and GPU streams are lanes; a few ranks stay readable.",
    )
    if not picked:
        st.info("Pick at least one rank.")
        st.stop()
    return sorted(picked)


def fmt_ms(v: float | None) -> str:
    """Milliseconds with sensible precision, or an em dash."""
    if v is None:
        return "—"
    return f"{v:,.2f} ms" if v < 100 else f"{v:,.0f} ms"


def fmt_pct(v: float | None) -> str:
    """A percentage, or an em dash."""
    return "—" if v is None else f"{v:.1f} %"
