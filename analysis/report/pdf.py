"""The report as a PDF with static charts: fpdf2 lays out the text and tables, matplotlib
draws the charts (analysis.report.static_charts), with the DejaVu fonts that matplotlib ships. No
browser, no network, no system fonts needed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib
from fpdf import FPDF
from fpdf.enums import XPos, YPos
from fpdf.fonts import FontFace

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
from analysis.report.static_charts import figure_image
from analysis.text import clip, printable

FONTS = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
SANS, MONO = "DejaVu", "DejaVuMono"
TEXT_PT, SMALL_PT, TABLE_PT, CODE_PT = 10, 8.5, 7, 8
LINE_MM = 5.0
HEADINGS = FontFace(emphasis="BOLD", fill_color=(246, 248, 250))
NAME_CHARS = 80  # kernel names in table cells; the HTML and Markdown reports keep them whole


class _Pdf(FPDF):
    def footer(self) -> None:
        self.set_y(-12)
        self.set_font(SANS, size=SMALL_PT)
        self.set_text_color(110)
        self.cell(0, 6, f"page {self.page_no()}/{{nb}}", align="C")
        self.set_text_color(0)


def _new_pdf(title: str) -> _Pdf:
    pdf = _Pdf(format="A4")
    pdf.add_font(SANS, "", str(FONTS / "DejaVuSans.ttf"))
    pdf.add_font(SANS, "B", str(FONTS / "DejaVuSans-Bold.ttf"))
    pdf.add_font(MONO, "", str(FONTS / "DejaVuSansMono.ttf"))
    pdf.set_title(title)
    pdf.set_margins(15, 15, 15)
    pdf.set_auto_page_break(True, margin=18)
    return pdf


def _text(pdf: FPDF, text: str, size: float = TEXT_PT, style: str = "") -> None:
    pdf.set_font(SANS, style, size)
    pdf.multi_cell(
        0, LINE_MM * size / TEXT_PT, printable(text), align="L", new_x=XPos.LMARGIN,
        new_y=YPos.NEXT,
    )  # fmt: skip
    pdf.ln(1)


def _heading(pdf: FPDF, text: str, size: float = 15) -> None:
    pdf.ln(2)
    _text(pdf, text, size, "B")


def _table(pdf: FPDF, t: Table) -> None:
    if t.title:
        _text(pdf, t.title, SMALL_PT, "B")
    pdf.set_font(SANS, size=TABLE_PT)
    # Each column as wide as its longest cell or header word (within 6 to 40 characters).
    widths = [
        float(min(max(6, *(len(w) for w in h.split()), *(len(r[i]) for r in t.rows)), 40))
        for i, h in enumerate(t.header)
    ]
    with pdf.table(
        col_widths=widths,
        text_align=("LEFT", *["RIGHT"] * (len(t.header) - 1)),
        line_height=TABLE_PT * 0.5,
        padding=0.8,
        headings_style=HEADINGS,
    ) as table:
        for row in [t.header, *t.rows]:
            cells = table.row()
            for c in row:
                cells.cell(printable(clip(c, NAME_CHARS)))
    pdf.ln(3)


def _code(pdf: FPDF, code: str) -> None:
    pdf.set_font(MONO, size=CODE_PT)
    pdf.set_fill_color(246, 248, 250)
    pdf.multi_cell(
        0,
        4,
        printable(code.rstrip()),
        align="L",
        fill=True,
        padding=2,
        new_x=XPos.LMARGIN,
        new_y=YPos.NEXT,
    )
    pdf.ln(3)


def _recommendation(pdf: FPDF, r: Recommendation) -> None:
    rec = r.rec
    _heading(pdf, f"{r.rank}. {rec.get('title', '')}", 12)
    _text(pdf, f"{rec.get('id', '')} · {saving_text(rec)}", SMALL_PT)
    if rec.get("why"):
        _text(pdf, str(rec["why"]))
    if targets := targets_text(rec, NAME_CHARS):
        _text(pdf, targets, SMALL_PT)
    _text(pdf, "Evidence", TEXT_PT, "B")
    for e in rec.get("evidence") or []:
        _text(pdf, f"•  {e}", SMALL_PT)
    _text(pdf, "Fix", TEXT_PT, "B")
    _code(pdf, str(rec.get("fix") or ""))


def _block(pdf: FPDF, b: Block) -> None:
    if isinstance(b, str):
        _text(pdf, b)
    elif isinstance(b, Note):
        _text(pdf, b.text, SMALL_PT)
    elif isinstance(b, Table):
        _table(pdf, b)
    elif isinstance(b, Recommendation):
        _recommendation(pdf, b)
    else:
        pdf.image(figure_image(b), w=pdf.epw)
        pdf.ln(2)


def render_pdf(doc: dict[str, Any], charts: dict[str, Chart]) -> bytes:
    """The whole report as PDF bytes: `doc` is analysis.report.document.report_json's dict, `charts`
    analysis.report.charts.report_charts's. The summary and metrics share the first page;
    every other section starts a page."""
    run = doc["run"]
    title = f"GPU performance report: {run['name']}"
    pdf = _new_pdf(title)
    pdf.add_page()
    _heading(pdf, title, 18)
    _text(pdf, f"run {run['id']} · {run['device_name'] or '—'}", SMALL_PT)
    for sid, name, blocks in report_blocks(doc, charts):
        if sid not in ("summary", "metrics"):
            pdf.add_page()
        _heading(pdf, name)
        for b in blocks:
            _block(pdf, b)
    return bytes(pdf.output())
