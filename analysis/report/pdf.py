"""The report as a PDF with static charts: fpdf2 lays out the text and tables, matplotlib
draws the charts (analysis.report.static_charts), with the DejaVu fonts that matplotlib ships. No
browser, no network, no system fonts needed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib
from fpdf import FPDF
from fpdf.enums import MethodReturnValue, XPos, YPos
from fpdf.fonts import FontFace
from PIL.Image import Image

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
CODE_LINE_MM = 4.0
HEADING_MM = 10.0
MIN_FOLLOW_MM = 25.0  # what must follow a heading or a table's title on its page
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


def _keep(pdf: FPDF, height_mm: float) -> None:
    """Start a new page unless `height_mm` still fit on this one: a block that does not
    fit starts on the next page whole, instead of leaving two lines of it there."""
    if pdf.get_y() + height_mm > pdf.page_break_trigger and pdf.get_y() > pdf.t_margin + 1:
        pdf.add_page()


def _heading(pdf: FPDF, text: str, size: float = 15, first_mm: float = 0.0) -> None:
    """A heading, kept on one page with the start of what follows it (`first_mm` high)."""
    _keep(pdf, min(HEADING_MM + max(first_mm, MIN_FOLLOW_MM), pdf.eph))
    pdf.ln(2)
    _text(pdf, text, size, "B")


def _table(pdf: FPDF, t: Table) -> None:
    _keep(pdf, MIN_FOLLOW_MM)  # the title and the header with a row or two
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


_CODE: dict[str, Any] = {"align": "L", "fill": True, "padding": 2}


def _code_height(pdf: FPDF, code: str) -> float:
    pdf.set_font(MONO, size=CODE_PT)
    height = pdf.multi_cell(
        0, CODE_LINE_MM, code.rstrip(), dry_run=True, output=MethodReturnValue.HEIGHT, **_CODE
    )
    assert isinstance(height, float | int)
    return float(height)


def _code(pdf: FPDF, code: str, label: str) -> None:
    """A labelled code block, kept whole on one page with its label when it fits a page."""
    _keep(pdf, min(LINE_MM + 1 + _code_height(pdf, code), pdf.eph))
    _text(pdf, label, TEXT_PT, "B")
    pdf.set_font(MONO, size=CODE_PT)
    pdf.set_fill_color(246, 248, 250)
    pdf.multi_cell(
        0, CODE_LINE_MM, printable(code.rstrip()), new_x=XPos.LMARGIN, new_y=YPos.NEXT, **_CODE
    )
    pdf.ln(3)


def _recommendation(pdf: FPDF, r: Recommendation) -> None:
    rec = r.rec
    _heading(pdf, f"{r.rank}. {rec.get('title', '')}", 12, MIN_FOLLOW_MM)
    _text(pdf, f"{rec.get('id', '')} · {saving_text(rec)}", SMALL_PT)
    if rec.get("track_record"):
        _text(pdf, str(rec["track_record"]), SMALL_PT)
    if rec.get("close_call"):
        _text(pdf, str(rec["close_call"]), SMALL_PT, "B")
    if rec.get("why"):
        _text(pdf, str(rec["why"]))
    if rec.get("saving_basis"):
        _text(pdf, str(rec["saving_basis"]), SMALL_PT)
    if targets := targets_text(rec, NAME_CHARS):
        _text(pdf, targets, SMALL_PT)
    _keep(pdf, 3 * LINE_MM)  # the label and the first line of evidence
    _text(pdf, "Evidence", TEXT_PT, "B")
    for e in rec.get("evidence") or []:
        _text(pdf, f"•  {e}", SMALL_PT)
    _code(pdf, str(rec.get("fix") or ""), "Fix")


def _image(pdf: FPDF, b: Block, images: dict[int, Image]) -> Image | None:
    """The static image of a chart block (drawn once), None for any other block."""
    if isinstance(b, str | Note | Table | Recommendation):
        return None
    if id(b) not in images:
        images[id(b)] = figure_image(b)
    return images[id(b)]


def _image_mm(pdf: FPDF, image: Image) -> float:
    return float(pdf.epw * image.height / image.width)


def _block(pdf: FPDF, b: Block, images: dict[int, Image]) -> None:
    image = _image(pdf, b, images)
    if image is not None:
        _keep(pdf, _image_mm(pdf, image))
        pdf.image(image, w=pdf.epw)
        pdf.ln(2)
    elif isinstance(b, str):
        _text(pdf, b)
    elif isinstance(b, Note):
        _text(pdf, b.text, SMALL_PT)
    elif isinstance(b, Table):
        _table(pdf, b)
    elif isinstance(b, Recommendation):
        _recommendation(pdf, b)


def render_pdf(doc: dict[str, Any], charts: dict[str, Chart]) -> bytes:
    """The whole report as PDF bytes: `doc` is analysis.report.document.report_json's dict, `charts`
    analysis.report.charts.report_charts's. Sections follow each other on a page; a
    heading, a chart or a fix that would not fit starts the next page."""
    run = doc["run"]
    title = f"GPU performance report: {run['name']}"
    pdf = _new_pdf(title)
    pdf.add_page()
    _heading(pdf, title, 18)
    _text(pdf, f"run {run['id']} · {run['device_name'] or '—'}", SMALL_PT)
    images: dict[int, Image] = {}
    for _, name, blocks in report_blocks(doc, charts):
        first = _image(pdf, blocks[0], images) if blocks else None
        _heading(pdf, name, first_mm=0.0 if first is None else _image_mm(pdf, first))
        for b in blocks:
            _block(pdf, b, images)
    return bytes(pdf.output())
