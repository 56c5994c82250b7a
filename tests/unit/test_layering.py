"""Arrows go one way: collectors -> data <- analysis <- pages/app.py (ARCHITECTURE.md).

Every import in the layer's files counts, including imports inside functions and under
TYPE_CHECKING, relative imports (resolved to their absolute module) and importlib calls with
a literal module name.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from helpers.imports import imported_modules
from helpers.paths import ENTRY_POINTS, REPO

FORBIDDEN: dict[str, set[str]] = {
    "data": {"analysis", "collectors", "pages", "app", "streamlit", "plotly", "torch", "pynvml"},
    "analysis": {"collectors", "pages", "app", "streamlit", "torch", "pynvml"},
    "collectors": {"analysis", "pages", "app", "streamlit", "plotly"},
    "pages": {"collectors", "duckdb", "pynvml", "torch"},
    "app": {"collectors", "duckdb", "pynvml", "torch"},
}


def layer_files(root: Path, layer: str) -> list[Path]:
    if layer == "app":
        return [f for f in (root / name for name in ENTRY_POINTS) if f.is_file()]
    folder = root / layer
    return sorted(folder.rglob("*.py")) if folder.is_dir() else []


def violations(root: Path, layer: str) -> list[str]:
    """'file:line: layer imports module' for every forbidden import, in file and line order."""
    bad = []
    for f in layer_files(root, layer):
        for line, mod in sorted(imported_modules(f, root)):
            if mod.split(".")[0] in FORBIDDEN[layer]:
                bad.append(f"{f.relative_to(root)}:{line}: {layer} imports {mod}")
    return bad


@pytest.mark.parametrize("layer", list(FORBIDDEN))
def test_layer_imports(layer: str) -> None:
    assert violations(REPO, layer) == []


# analysis/load.py is the read side of the analyses: no other analysis module touches the
# store, so each of a run's tables is read once, into one typed object.
STORE_MODULES = ("data.store", "data.reads")
STORE_READER = Path("analysis/load.py")


def store_readers(root: Path) -> list[str]:
    """'file:line: module' for every import of the store in analysis/ outside load.py
    (`from data import reads_x` names the module data.reads_x)."""
    bad = []
    for f in layer_files(root, "analysis"):
        if f.relative_to(root) == STORE_READER:
            continue
        named = list(imported_modules(f, root))
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                named += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
        for line, mod in sorted(set(named)):
            if mod.startswith(STORE_MODULES):
                bad.append(f"{f.relative_to(root)}:{line}: {mod}")
    return bad


def test_only_the_loader_reads_the_store() -> None:
    assert store_readers(REPO) == []


def test_layers_exist() -> None:
    """The check is not vacuous: the layers that exist today hold code with imports."""
    for layer in ("data", "collectors"):
        files = layer_files(REPO, layer)
        assert files, layer
        assert any(list(imported_modules(f, REPO)) for f in files), layer


def test_checker_flags_planted_imports(tmp_path: Path) -> None:
    (tmp_path / "data" / "sub").mkdir(parents=True)
    (tmp_path / "data" / "__init__.py").write_text("")
    (tmp_path / "data" / "ok.py").write_text(
        "import json\nfrom data.errors import DashError\nfrom . import schema\n"
    )
    (tmp_path / "data" / "sub" / "bad.py").write_text(
        "import streamlit as st\n"
        "from collectors.ingest import ingest\n"
        "from ...analysis import roofline\n"
        "def f():\n    import torch.cuda\n"
        "import importlib\nm = importlib.import_module('pynvml')\n"
    )
    (tmp_path / "pages").mkdir()
    (tmp_path / "pages" / "1_runs.py").write_text("import duckdb\n")
    (tmp_path / "app.py").write_text("from collectors import ingest\n")

    assert violations(tmp_path, "data") == [
        "data/sub/bad.py:1: data imports streamlit",
        "data/sub/bad.py:2: data imports collectors.ingest",
        "data/sub/bad.py:3: data imports analysis",
        "data/sub/bad.py:5: data imports torch.cuda",
        "data/sub/bad.py:7: data imports pynvml",
    ]
    assert violations(tmp_path, "pages") == ["pages/1_runs.py:1: pages imports duckdb"]
    assert violations(tmp_path, "app") == ["app.py:1: app imports collectors"]
    assert violations(tmp_path, "analysis") == []  # a missing folder is no violation
    (tmp_path / "analysis").mkdir()
    (tmp_path / "analysis" / "load.py").write_text("from data.store import Store\n")
    (tmp_path / "analysis" / "rules.py").write_text(
        "from data import reads_roofline\nfrom data.errors import DashError\n"
        "def f():\n    from data.store import Store\n"
    )
    assert store_readers(tmp_path) == [
        "analysis/rules.py:1: data.reads_roofline",
        "analysis/rules.py:4: data.store",
        "analysis/rules.py:4: data.store.Store",
    ]
