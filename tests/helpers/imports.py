"""The imports of a Python file, as absolute module names (the layering and structure tests).

Every import counts, including imports inside functions and under TYPE_CHECKING, relative
imports (resolved to their absolute module) and importlib calls with a literal module name.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path


def imported_modules(path: Path, root: Path) -> Iterator[tuple[int, str]]:
    """(line, absolute module name) of every import in a file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = list(path.relative_to(root).parts[:-1])  # the file's package, as a list
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                prefix = ".".join(package[: len(package) - (node.level - 1)])
                mod = f"{prefix}.{node.module}" if node.module else prefix
                if not node.module:  # from . import x  -> x is a module of the package
                    for alias in node.names:
                        yield node.lineno, f"{prefix}.{alias.name}" if prefix else alias.name
                    continue
                yield node.lineno, mod.lstrip(".")
            elif node.module:
                yield node.lineno, node.module
        elif (
            isinstance(node, ast.Call)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and (
                (isinstance(node.func, ast.Name) and node.func.id == "__import__")
                or (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
            )
        ):
            yield node.lineno, node.args[0].value
