"""The shape of the house: no import circle between the project's modules, and no file over
400 lines (small files named after what they hold)."""

from __future__ import annotations

import ast
from pathlib import Path

from helpers.imports import imported_modules
from helpers.paths import ENTRY_POINTS, REPO

PACKAGES = ("analysis", "collectors", "data", "pages", "benchmarks", "tools", "tests")
MAX_LINES = 400


def project_files(root: Path) -> list[Path]:
    files = [f for f in (root / name for name in ENTRY_POINTS) if f.is_file()]
    for top in PACKAGES:
        files += [f for f in sorted((root / top).rglob("*.py")) if "data" not in f.parts[1:-1]]
    return files


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path) -> dict[str, set[str]]:
    """module -> the project modules it imports (`from a import b` names a.b when that is
    a module, else a)."""
    files = project_files(root)
    known = {module_name(f, root) for f in files}
    graph: dict[str, set[str]] = {}
    for f in files:
        names = {mod for _, mod in imported_modules(f, root)}
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names |= {f"{node.module}.{a.name}" for a in node.names}
        me = module_name(f, root)
        graph[me] = {n for n in names if n in known and n != me}
        # `from a import b` where b is a module: the edge goes to a.b, not to package a.
        graph[me] -= {n for n in graph[me] if any(m.startswith(n + ".") for m in graph[me])}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while (w := stack.pop()) != v:
                part.append(w)
            part.append(v)
            if len(part) > 1:
                out.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circle() -> None:
    assert circles(import_graph(REPO)) == []


def test_no_file_over_400_lines() -> None:
    long = {
        str(f.relative_to(REPO)): n
        for f in project_files(REPO)
        if (n := len(f.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


def test_the_checks_see_planted_problems(tmp_path: Path) -> None:
    (tmp_path / "analysis").mkdir()
    (tmp_path / "analysis" / "__init__.py").write_text("")
    (tmp_path / "analysis" / "a.py").write_text("from analysis import b\n")
    (tmp_path / "analysis" / "b.py").write_text("import analysis.c\n")
    (tmp_path / "analysis" / "c.py").write_text("from analysis.a import f\n" + "x = 1\n" * 400)
    (tmp_path / "analysis" / "d.py").write_text("from analysis import c\n")
    graph = import_graph(tmp_path)
    assert circles(graph) == [["analysis.a", "analysis.b", "analysis.c"]]
    assert graph["analysis.d"] == {"analysis.c"}
