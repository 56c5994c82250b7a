"""Ranked recommendations: every detecting rule runs on one run's facts; findings are ranked
by estimated time saved per step.

A rule (analysis/rules_*.py) is a function `Facts -> Finding | None` registered with
`@rule("<id>")`; its title, fix and thresholds come from analysis.rules_catalog. Savings of
different rules overlap (fixing one changes the others' base), so they rank, they do not add.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from analysis.evidence import Facts, gather
from analysis.rules_catalog import CATALOG
from data.store import Store

CONFIDENCE = ("high", "medium", "low")


@dataclass(frozen=True)
class Finding:
    """What a rule saw: saving per step (ms), confidence, evidence lines, the measurement
    behind the saving (`why`), and the kernels/ops it points at."""

    saving_ms: float
    confidence: str
    evidence: tuple[str, ...]
    why: str
    kernels: tuple[str, ...] = ()
    ops: tuple[str, ...] = ()


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
        }


RuleFn = Callable[[Facts], "Finding | None"]
RULES: dict[str, RuleFn] = {}


def rule(rule_id: str) -> Callable[[RuleFn], RuleFn]:
    """Register a detecting rule for a catalog id."""
    if rule_id not in CATALOG:
        raise KeyError(f"{rule_id}: not in analysis.rules_catalog")

    def register(fn: RuleFn) -> RuleFn:
        RULES[rule_id] = fn
        return fn

    return register


def _load_rules() -> None:
    # Importing the rule modules registers them; imported here so that the catalog and the
    # engine do not import each other at module load.
    from analysis import (  # noqa: F401
        rules_distributed,
        rules_fusion,
        rules_host,
        rules_inference,
        rules_memory,
        rules_precision,
        rules_telemetry,
    )


def recommend(facts: Facts) -> list[Recommendation]:
    """Every rule that fires on the facts, largest saving first (ties: higher confidence)."""
    _load_rules()
    out = []
    for rule_id, fn in RULES.items():
        found = fn(facts)
        if found is None or found.saving_ms <= 0:  # a measured zero saving is no advice
            continue
        entry = CATALOG[rule_id]
        pct = 100.0 * found.saving_ms / facts.step_ms if facts.step_ms else 0.0
        out.append(
            Recommendation(
                id=rule_id,
                title=entry.title,
                est_saving_ms=max(found.saving_ms, 0.0),
                est_saving_pct=max(pct, 0.0),
                confidence=found.confidence,
                evidence=found.evidence,
                fix=entry.fix,
                why=found.why,
                kernels=found.kernels,
                ops=found.ops,
            )
        )
    return sorted(out, key=lambda r: (-r.est_saving_ms, CONFIDENCE.index(r.confidence), r.id))


def run_recommendations(store: Store, run_id: str) -> list[Recommendation]:
    """Read a run and rank its recommendations."""
    return recommend(gather(store, run_id))


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
