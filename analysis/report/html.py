"""The report as one self-contained HTML file: interactive charts, opens offline.

plotly.js is inlined once (with the first chart; the others reuse it), the CSS is inline, and
nothing is loaded from a URL. Every text from the run (names, kernels, evidence, fixes) is
escaped: kernel names hold `<` and `>` (templates).
"""

from __future__ import annotations

from html import escape as html_escape
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio

from analysis.report.sections import (
    SECTIONS,
    Block,
    Chart,
    Note,
    Recommendation,
    Table,
    report_blocks,
    saving_text,
    targets_text,
)
from analysis.text import printable


def escape(text: str) -> str:
    """Text as literal HTML, its control characters (a NUL in a name) shown as U+FFFD."""
    return html_escape(printable(text))


# The modebar's plotly logo links to plotly's site: a report links nowhere.
PLOTLY_CONFIG = {"displaylogo": False, "responsive": True}
REPORT_TEMPLATE = "plotly"  # the one the charts' layout is read back against (tests/browser)
CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0;
       color: #1f2328; background: #fff; line-height: 1.45; }
main { max-width: 1200px; margin: 0 auto; padding: 1rem 2rem 4rem; }
header { border-bottom: 1px solid #d0d7de; margin-bottom: 1rem; }
nav a { margin-right: 1rem; color: #0969da; text-decoration: none; }
h1 { font-size: 1.7rem; margin-bottom: 0.2rem; }
h2 { border-bottom: 1px solid #d0d7de; padding-bottom: 0.2rem; margin-top: 2.2rem; }
.muted { color: #59636e; }
table { border-collapse: collapse; margin: 0.6rem 0 1rem; font-size: 0.86rem; }
th, td { border: 1px solid #d0d7de; padding: 0.25rem 0.5rem; text-align: right; }
th { background: #f6f8fa; }
td:first-child, th:first-child { text-align: left; max-width: 32rem; overflow-wrap: anywhere; }
.rec { border: 1px solid #d0d7de; border-radius: 6px; padding: 0.6rem 1rem; margin: 1rem 0; }
.rec h3 { margin: 0.2rem 0; }
.badge { display: inline-block; border-radius: 1rem; padding: 0 0.6rem; font-size: 0.8rem;
         background: #ddf4ff; color: #0550ae; }
.close { background: #fff8c5; border-left: 3px solid #d4a72c; padding: 0.3rem 0.6rem; }
pre { background: #f6f8fa; border: 1px solid #d0d7de; border-radius: 6px; padding: 0.6rem;
      overflow-x: auto; font-size: 0.85rem; }
""".strip()


def _table(t: Table) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in t.header)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in t.rows
    )
    title = f"<h3>{escape(t.title)}</h3>" if t.title else ""
    return f"{title}<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _recommendation(r: Recommendation) -> str:
    rec = r.rec
    evidence = "".join(f"<li>{escape(str(e))}</li>" for e in rec.get("evidence") or [])
    targets = targets_text(rec)
    track = str(rec.get("track_record") or "")
    close = str(rec.get("close_call") or "")
    basis = str(rec.get("saving_basis") or "")
    return f"""<article class="rec" id="rec-{escape(str(rec.get("id", r.rank)))}">
<h3>{r.rank}. {escape(str(rec.get("title", "")))}</h3>
<p><span class="badge">{escape(str(rec.get("id", "")))}</span> {escape(saving_text(rec))}</p>
{f'<p class="muted">{escape(track)}</p>' if track else ""}
{f'<p class="close">{escape(close)}</p>' if close else ""}
<p>{escape(str(rec.get("why") or ""))}</p>
{f'<p class="muted">{escape(basis)}</p>' if basis else ""}
{f'<p class="muted">{escape(targets)}</p>' if targets else ""}
<h4>Evidence</h4><ul>{evidence}</ul>
<h4>Fix</h4><pre><code class="language-python">{escape(str(rec.get("fix") or ""))}</code></pre>
</article>"""


def _block(b: Block, div_id: str, with_plotlyjs: bool) -> str:
    if isinstance(b, str):
        return f"<p>{escape(b)}</p>"
    if isinstance(b, Note):
        return f'<p class="muted">{escape(b.text)}</p>'
    if isinstance(b, Table):
        return _table(b)
    if isinstance(b, Recommendation):
        return _recommendation(b)
    # The report's own template: a figure built after `import streamlit` carries Streamlit's
    # (its tick labels overflowed the bandwidth chart by 6 px), one built by the CLI plotly's.
    figure = go.Figure(b).update_layout(template=REPORT_TEMPLATE)
    return str(
        pio.to_html(
            figure,
            full_html=False,
            include_plotlyjs=with_plotlyjs,
            config=PLOTLY_CONFIG,
            div_id=div_id,
        )
    )


def render_html(doc: dict[str, Any], charts: dict[str, Chart]) -> str:
    """The whole report: `doc` is analysis.report.document.report_json's dict, `charts`
    analysis.report.charts.report_charts's."""
    sections, figures = [], 0
    for sid, title, blocks in report_blocks(doc, charts):
        parts = []
        for b in blocks:
            parts.append(_block(b, f"chart-{sid}", with_plotlyjs=figures == 0))
            figures += isinstance(b, go.Figure)
        body = "\n".join(parts)
        sections.append(f'<section id="{sid}">\n<h2>{escape(title)}</h2>\n{body}\n</section>')
    run = doc["run"]
    title = f"GPU performance report: {run['name']}"
    nav = "".join(f'<a href="#{sid}">{escape(t)}</a>' for sid, t in SECTIONS)
    all_sections = "\n".join(sections)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title>
<style>
{CSS}
</style>
</head>
<body>
<main>
<header>
<h1>{escape(title)}</h1>
<p class="muted">run {escape(str(run["id"]))} · {escape(str(run["device_name"] or "—"))}</p>
<nav>{nav}</nav>
</header>
{all_sections}
</main>
</body>
</html>
"""
