"""The report as Markdown (GitHub flavour): the same sections as the HTML and PDF reports,
tables for the numbers, a text summary in place of each chart, fenced code for the fixes."""

from __future__ import annotations

import re
from typing import Any

from analysis.report.sections import (
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

# Characters Markdown would read as markup (emphasis, links, HTML tags, table cells).
_SPECIAL = re.compile(r"([\\`*_\[\]<>|#])")
CHARTS_NOTE = "The chart is in the HTML and PDF reports (`--format html` or `--format pdf`)."


def md_escape(text: str) -> str:
    """Text as literal Markdown: markup characters backslash-escaped, on one line, control
    characters (a NUL in a name) as U+FFFD."""
    return _SPECIAL.sub(r"\\\1", " ".join(printable(str(text)).split()))


def _table(t: Table) -> str:
    lines = [f"**{md_escape(t.title)}**", ""] if t.title else []
    lines.append("| " + " | ".join(md_escape(h) for h in t.header) + " |")
    lines.append("|" + "|".join([":---", *["---:"] * (len(t.header) - 1)]) + "|")
    lines += ["| " + " | ".join(md_escape(c) for c in row) + " |" for row in t.rows]
    return "\n".join(lines)


def _fence(code: str) -> str:
    """A fenced Python block longer than any backtick run inside the code."""
    longest = max((len(m) for m in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}python\n{code.rstrip()}\n{fence}"


def _recommendation(r: Recommendation) -> str:
    rec = r.rec
    parts = [
        f"### {r.rank}. {md_escape(str(rec.get('title', '')))}",
        f"`{rec.get('id', '')}` · {md_escape(saving_text(rec))}",
        md_escape(str(rec.get("why") or "")),
    ]
    if basis := rec.get("saving_basis"):
        parts.append(md_escape(str(basis)))
    if track := rec.get("track_record"):
        parts.insert(2, f"*{md_escape(str(track))}*")
    if close := rec.get("close_call"):
        parts.insert(3 if track else 2, f"**{md_escape(str(close))}**")
    if targets := targets_text(rec):
        parts.append(md_escape(targets))
    evidence = rec.get("evidence") or []
    parts.append("**Evidence**\n\n" + "\n".join(f"- {md_escape(str(e))}" for e in evidence))
    parts.append("**Fix**\n\n" + _fence(str(rec.get("fix") or "")))
    return "\n\n".join(parts)


def _block(b: Block) -> str:
    if isinstance(b, str):
        return md_escape(b)
    if isinstance(b, Note):
        return f"*{md_escape(b.text)}*"
    if isinstance(b, Table):
        return _table(b)
    if isinstance(b, Recommendation):
        return _recommendation(b)
    return CHARTS_NOTE  # a figure: Markdown carries its summary, not its image


def render_md(doc: dict[str, Any], charts: dict[str, Chart]) -> str:
    """The whole report: `doc` is analysis.report.document.report_json's dict, `charts`
    analysis.report.charts.report_charts's."""
    run = doc["run"]
    out = [
        f"# GPU performance report: {md_escape(run['name'])}",
        f"Run `{run['id']}` · {md_escape(str(run['device_name'] or '—'))}",
    ]
    for _, title, blocks in report_blocks(doc, charts):
        out.append(f"## {title}")
        out += [_block(b) for b in blocks]
    return "\n\n".join(out) + "\n"
