"""Ranked recommendations: every family's rules run on one run's facts; findings are ranked
by estimated time saved per step.

A rule (analysis.rules.registry) finds its mechanism in the facts or stays silent; its
title, fix and thresholds come from analysis.rules.catalog. Savings of different rules
overlap (fixing one changes the others' base), so they rank, they do not add.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from analysis.facts import Facts
from analysis.rules import (
    distributed,
    fusion,
    host,
    inference,
    layout,
    memory,
    precision,
    telemetry,
)
from analysis.rules.catalog import CATALOG
from analysis.rules.registry import Finding, Rule
from analysis.rules.saving_basis import saving_basis
from analysis.rules.track_record import (
    close_call_text,
    likely_saving_ms,
    ranges_overlap,
    track_record_text,
)
from analysis.rules.track_record_h200 import ORDER_RECORD, TRACK_RECORD

CONFIDENCE = ("high", "medium", "low")
MINOR_PCT = 0.5  # a finding that saves less than this share of the step is not ranked
RULES: dict[str, Rule] = {
    r.id: r
    for family in (distributed, precision, layout, fusion, host, inference, memory, telemetry)
    for r in family.RULES
}


@dataclass(frozen=True)
class Recommendation:
    id: str
    title: str
    est_saving_ms: float
    est_saving_pct: float
    confidence: str
    evidence: tuple[str, ...]
    fix: str
    why: str
    kernels: tuple[str, ...]
    ops: tuple[str, ...]
    minor: bool = False  # under MINOR_PCT of the step: listed apart, not ranked
    alternative_of: str = ""  # a higher-ranked id whose fix targets the same kernels
    track_record: str = ""  # how this finding's estimates did against measured savings
    # the range the saving is likely to measure, from the track record (None: no range)
    likely_saving_ms: tuple[float, float] | None = None
    # higher-ranked ids whose likely ranges overlap this one's: which saves more is uncertain
    close_to: tuple[str, ...] = ()
    close_call: str = ""  # what that means, with the ranking's record on such pairs
    saving_basis: str = ""  # how the fix's GPU, host and waiting time make the saving

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "est_saving_pct": round(self.est_saving_pct, 3),
            "est_saving_ms": round(self.est_saving_ms, 4),
            "confidence": self.confidence,
            "evidence": list(self.evidence),
            "fix": self.fix,
            "why": self.why,
            "kernels": list(self.kernels),
            "ops": list(self.ops),
            "minor": self.minor,
            "alternative_of": self.alternative_of or None,
            "track_record": self.track_record,
            "likely_saving_ms": (
                None
                if self.likely_saving_ms is None
                else [round(x, 4) for x in self.likely_saving_ms]
            ),
            "close_to": list(self.close_to),
            "close_call": self.close_call,
            "saving_basis": self.saving_basis,
        }


def likely_of(rec: dict[str, Any]) -> tuple[float, float] | None:
    """A recommendation's likely_saving_ms as a report holds it (as_json), as (low, high);
    None without one, in a report written before it had the key, or malformed."""
    likely = rec.get("likely_saving_ms")
    if isinstance(likely, list | tuple) and len(likely) == 2:
        low, high = likely
        if isinstance(low, int | float) and isinstance(high, int | float):
            return float(low), float(high)
    return None


def saving_of(found: Finding, facts: Facts) -> float:
    """A finding's saving per step, in ms of the step run without the profiler when the run
    has ProfilerSteps (never more than the step), else on the trace's timeline."""
    model = facts.step_model
    if model is None:
        total = found.gpu_ms + found.host_ms + found.serial_ms
        return found.saving_ms if found.saving_ms is not None else total
    if found.saving_ms is not None:
        return min(max(found.saving_ms, 0.0), model.unprofiled_ms)
    return model.saving(found.gpu_ms, found.host_ms, found.serial_ms)


def recommend(facts: Facts) -> list[Recommendation]:
    """Every rule that fires on the facts, largest saving first (ties: higher confidence);
    findings under MINOR_PCT of the step come last, marked minor."""
    out = []
    step = facts.step_ms
    for rule_id, fn in RULES.items():
        found = fn(facts)
        if found is None:
            continue
        saving = saving_of(found, facts)
        # No saving and nothing the fix removes is no advice; a fix that removes work the
        # step does not wait for (GPU time under a host-bound step) is listed as minor.
        if saving <= 0 and found.gpu_ms + found.host_ms + found.serial_ms <= 0:
            continue
        entry, record = CATALOG[rule_id], TRACK_RECORD.get(rule_id)
        # Rounded as the JSON report carries it, so the page and the report print one figure.
        pct = round(100.0 * saving / step, 3) if step else 0.0
        out.append(
            Recommendation(
                id=rule_id,
                title=entry.title,
                est_saving_ms=saving,
                est_saving_pct=pct,
                confidence=found.confidence,
                evidence=found.evidence,
                fix=found.fix or entry.fix,
                why=found.why,
                kernels=found.kernels,
                ops=found.ops,
                minor=pct < MINOR_PCT,
                track_record=track_record_text(record, saving),
                likely_saving_ms=likely_saving_ms(record, saving),
                saving_basis=saving_basis(found, facts.step_model, saving),
            )
        )
    ranked = sorted(
        out, key=lambda r: (r.minor, -r.est_saving_ms, CONFIDENCE.index(r.confidence), r.id)
    )
    # Of two fixes for the same kernels (TF32 or bf16 for fp32 matmuls), the one ranked lower
    # is the other's alternative: their savings do not add up.
    kept: list[Recommendation] = []
    for r in ranked:
        first = next((x.id for x in kept if _alternatives(x.id, r.id)), "")
        kept.append(replace(r, alternative_of=first) if first else r)
    return [_with_close_calls(r, kept[:i]) for i, r in enumerate(kept)]


def _with_close_calls(r: Recommendation, above: list[Recommendation]) -> Recommendation:
    """`r` with the ranked findings above it whose likely ranges overlap its own: on the
    rival pairs, the order of two such fixes matched the measured savings about half the time
    (D88), so the ranking alone should not decide between them."""
    if r.minor or r.likely_saving_ms is None:
        return r
    close = [
        (rank, x.id)
        for rank, x in enumerate(above, 1)
        if x.likely_saving_ms is not None and ranges_overlap(x.likely_saving_ms, r.likely_saving_ms)
    ]
    if not close:
        return r
    return replace(
        r, close_to=tuple(i for _, i in close), close_call=close_call_text(close, ORDER_RECORD)
    )


def _alternatives(a: str, b: str) -> bool:
    return CATALOG[a].alternative_to == b or CATALOG[b].alternative_to == a


def kernels_behind(
    facts: Facts, rec: Recommendation, n: int = 8
) -> tuple[pd.DataFrame, int | None]:
    """The kernels and ops a recommendation names, as the run ran them: op, kernel, count,
    ms_per_step (the n with the most time), and the start of the first one (None when the
    run has none of them)."""
    k = facts.kernels
    hit = k[k["name"].isin(rec.kernels) | k["op_name"].isin(rec.ops)]
    if hit.empty:
        return pd.DataFrame(columns=["op", "kernel", "count", "ms_per_step"]), None
    top = (
        hit.groupby(["op_name", "name"], observed=True)["dur_ns"]
        .agg(["size", "sum"])
        .sort_values("sum", ascending=False)
        .head(n)
        .reset_index()
    )
    table = pd.DataFrame(
        {
            "op": top["op_name"].astype(str),
            "kernel": top["name"].astype(str),
            "count": top["size"].astype(int),
            "ms_per_step": [facts.per_step_ms(float(v)) for v in top["sum"]],
        }
    )
    return table, int(hit["ts_ns"].min())
