"""Report files of real runs, written once per session, and what a reader sees in them: how
full each PDF page is (read back with pypdf, not from the writer's own bookkeeping)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from pypdf import PdfReader

from analysis.report.export import export
from analysis.report.run import load_report
from collectors.ingest import ingest
from data.errors import DuplicateTraceError
from data.store import Store
from helpers.stores import session_folder

PT_PER_MM = 72 / 25.4
TOP_MARGIN_MM, BREAK_MARGIN_MM = 15, 18  # analysis/report/pdf.py's page layout
FOOTER_PT = 40  # the page number sits below this height


@cache
def report_file(trace: Path, fmt: str) -> Path:
    """The report of one trace (ingested into a session store) in one format."""
    folder = session_folder("report-files-")
    out = folder / f"{trace.name}.{fmt}"
    if not out.exists():
        s = Store(folder)
        try:
            run_id = ingest([trace], data_dir=folder)
        except DuplicateTraceError as e:  # another format of the same trace ingested it
            run_id = str(e.run_id)
        doc, charts = load_report(s, run_id)
        body = export(doc, charts, fmt)
        out.write_bytes(body if isinstance(body, bytes) else body.encode())
    return out


def page_fills(pdf: Path) -> list[float]:
    """Per page, the share of the printable height its content reaches down to: the lowest
    text line or image, measured from the top margin (the page number left out)."""
    return [_fill(page) for page in PdfReader(pdf).pages]


def _fill(page: Any) -> float:
    height = float(page.mediabox.height)
    lowest = [height]

    def text(t: str, cm: list[float], tm: list[float], *_: object) -> None:
        y = tm[5] * cm[3] + cm[5]
        if t.strip() and y > FOOTER_PT:
            lowest.append(y)

    def operator(op: bytes, args: object, cm: list[float], tm: list[float]) -> None:
        if op == b"Do":  # an image, drawn in the unit square under the matrix cm
            lowest.append(cm[5])

    page.extract_text(visitor_text=text, visitor_operand_before=operator)
    top, bottom = height - TOP_MARGIN_MM * PT_PER_MM, BREAK_MARGIN_MM * PT_PER_MM
    return (top - min(lowest)) / (top - bottom)
