"""Running one recommendation rule, or several, on a run's facts."""

from __future__ import annotations

from analysis.facts import Facts
from analysis.rules.recommend import RULES, saving_of
from analysis.rules.registry import Finding


def fire(facts: Facts, rule_id: str) -> Finding | None:
    return RULES[rule_id](facts)


def fired(facts: Facts, rule_ids: tuple[str, ...]) -> set[str]:
    return {r for r in rule_ids if fire(facts, r) is not None}


def saving(facts: Facts, rule_id: str) -> float:
    """The rule's saving per step as the ranking takes it (against the step model)."""
    found = fire(facts, rule_id)
    assert found is not None, f"{rule_id} did not fire"
    return saving_of(found, facts)
