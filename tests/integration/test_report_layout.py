"""The PDF report has no near-empty pages: sections follow each other, and a heading, a chart
or a fix that does not fit starts the next page whole (analysis/report/pdf.py). Read back
with pypdf on real runs: an H200 training run, an H200 CUDA-graph decode, a foreign H100 run
and a two-rank run."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.paths import SAMPLES, fixture
from helpers.report_files import page_fills, report_file
from pypdf import PdfReader

TRACES = {
    "h200-naive": fixture("h200/train_gpt2_fp32_naive.pt.trace.json.gz"),
    "h200-cudagraph": fixture("h200/decode_b1_cudagraph.pt.trace.json.gz"),
    "h100-bert": fixture("foreign/tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz"),
    "ddp-2rank": SAMPLES / "ddp_gpt_bf16_2rank",
}
MIN_FILL = 0.5  # every page but the last is at least half full


@pytest.mark.parametrize("trace", list(TRACES.values()), ids=list(TRACES))
def test_no_page_but_the_last_is_near_empty(trace: Path) -> None:
    fills = page_fills(report_file(trace, "pdf"))
    assert len(fills) >= 2
    assert min(fills[:-1]) >= MIN_FILL, fills


def test_a_fix_is_never_split_from_its_label() -> None:
    pdf = PdfReader(report_file(TRACES["h200-naive"], "pdf"))
    for page in pdf.pages[:-1]:
        lines = [ln for ln in (page.extract_text() or "").splitlines() if ln.strip()]
        # the last line before the page number is never a lone "Fix" or "Evidence" label
        assert lines[-2] not in ("Fix", "Evidence"), lines[-4:]
