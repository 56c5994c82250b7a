"""A report document and its charts in one of the formats: HTML, Markdown, JSON, PDF."""

from __future__ import annotations

import json
from typing import Any

from analysis.report.html import render_html
from analysis.report.md import render_md
from analysis.report.sections import Chart

FORMATS = ("html", "md", "json", "pdf")
MEDIA_TYPES = {
    "html": "text/html",
    "md": "text/markdown",
    "json": "application/json",
    "pdf": "application/pdf",
}


def export(doc: dict[str, Any], charts: dict[str, Chart] | None, fmt: str) -> str | bytes:
    """The report in one of FORMATS: text, or bytes for PDF. `doc` is
    analysis.report.document.report_json's dict, `charts` analysis.report.charts.report_charts's
    (not needed for JSON)."""
    if fmt == "json":
        return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
    if charts is None:
        raise ValueError(f"the {fmt} report needs the run's charts")
    if fmt == "html":
        return render_html(doc, charts)
    if fmt == "md":
        return render_md(doc, charts)
    # matplotlib and fpdf2 take ~0.5 s to import: only the PDF needs them.
    from analysis.report.pdf import render_pdf

    return render_pdf(doc, charts)
