"""Facts of the real traces for the recommendation-rule tests, each run ingested and
gathered once per test session (the shared fixtures through recommend_store, with the H200's
measured ceilings; the project's own samples into a store of their own)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from conftest import SAMPLES, fixture_runs
from fixture_store import session_folder
from recommend_store import facts as facts_of  # noqa: F401 (the rule tests import it here)

from analysis.facts import Facts, gather
from analysis.rules.recommend import RULES
from analysis.rules.registry import Finding
from collectors.ingest import ingest
from data.store import Store


def foreign_labels() -> list[str]:
    return [r.label for r in fixture_runs() if r.label.startswith("foreign/")]


@cache
def sample_facts(name: str, folder: Path = SAMPLES) -> Facts:
    """Facts of a trace (file or folder) in data/samples (or `folder`: tests/data)."""
    store = session_folder("rules-samples-")
    run_id = ingest([folder / name], data_dir=store)
    return gather(Store(store), run_id)


def fire(facts: Facts, rule_id: str) -> Finding | None:
    return RULES[rule_id](facts)


def fired(facts: Facts, rule_ids: tuple[str, ...]) -> set[str]:
    return {r for r in rule_ids if fire(facts, r) is not None}
