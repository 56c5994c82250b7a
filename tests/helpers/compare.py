"""The H200 fixtures' before/after pairs, compared once per test session (the compare
analysis, its command line and its page)."""

from __future__ import annotations

from functools import cache
from typing import Any

import pandas as pd

from analysis.compare import Comparison, compare, run_side
from data.store import Store
from helpers.stores import fixture_run

DECODE = ("h200/decode_b1.pt.trace.json.gz", "h200/decode_b1_cudagraph.pt.trace.json.gz")
LOADER = (
    "h200/train_gpt2_bf16_dataloader_w0.pt.trace.json.gz",
    "h200/train_gpt2_bf16_dataloader_w4.pt.trace.json.gz",
)


def pair(labels: tuple[str, str]) -> tuple[Store, str, str]:
    (s, before), (_, after) = fixture_run(labels[0]), fixture_run(labels[1])
    return s, before, after


@cache
def side(label: str) -> tuple[dict[str, Any], pd.DataFrame]:
    """One fixture run's report and class time, computed once per session."""
    return run_side(*fixture_run(label))


@cache
def comparison(labels: tuple[str, str]) -> Comparison:
    (rb, cb), (ra, ca) = side(labels[0]), side(labels[1])
    return compare(rb, ra, cb, ca)


def metric(c: Comparison, key: str) -> dict[str, Any]:
    return dict(c.metrics.set_index("metric").loc[key])
