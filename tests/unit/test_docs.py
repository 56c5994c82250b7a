"""Generated docs stay equal to their generators: docs/schema.md is what `python -m
data.schema` prints (the README's rule catalog: tests/unit/test_rules_catalog.py)."""

from __future__ import annotations

from helpers.paths import REPO

from data.schema import markdown


def test_schema_doc_is_the_generated_one() -> None:
    doc = (REPO / "docs" / "schema.md").read_text(encoding="utf-8")
    assert doc == markdown() + "\n", "regenerate it: python -m data.schema > docs/schema.md"
