"""What a rule is and what it returns. A rule is a function `Facts -> Finding | None`, made
a `Rule` by `@rule("<id>")` for an id of the catalog (analysis.rules.catalog); each family
module lists its rules in `RULES`, and analysis.rules.recommend runs every family's list."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from analysis.facts import Facts
from analysis.rules.catalog import CATALOG


@dataclass(frozen=True)
class Finding:
    """What a rule saw: confidence, evidence lines, the measurement behind the saving
    (`why`), the kernels/ops it points at, and what its fix removes from a step run without
    the profiler: GPU time, host time, serialized waiting (analysis.step_model; the saving
    is the step before less the step after). `saving_ms` is a saving the rule derives
    itself (per sequence, per sample, the straggler's lead), taken as it is; `fix` is the
    fix written for this run's case (causal or not, training or inference)."""

    confidence: str
    evidence: tuple[str, ...]
    why: str
    kernels: tuple[str, ...] = ()
    ops: tuple[str, ...] = ()
    gpu_ms: float = 0.0
    host_ms: float = 0.0
    serial_ms: float = 0.0
    saving_ms: float | None = None
    fix: str = ""  # empty: the catalog's fix


Detect = Callable[[Facts], "Finding | None"]


@dataclass(frozen=True)
class Rule:
    """A catalog id and the function that looks for its mechanism in a run."""

    id: str
    detect: Detect

    def __call__(self, facts: Facts) -> Finding | None:
        return self.detect(facts)


def rule(rule_id: str) -> Callable[[Detect], Rule]:
    """Make a detecting function the rule of a catalog id."""
    if rule_id not in CATALOG:
        raise KeyError(f"{rule_id}: not in analysis.rules.catalog")

    def make(fn: Detect) -> Rule:
        return Rule(rule_id, fn)

    return make
