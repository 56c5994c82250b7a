"""Numbers and names as the dashboard writes them in evidence, tables and reports."""

from __future__ import annotations

import math
from html import escape
from typing import Any

# C0 controls but tab and line breaks, and DEL: a NUL in a kernel name went into the HTML and
# Markdown reports as it was (browsers and renderers then drop or mangle the text around it).
_CONTROL = {c: "\ufffd" for c in [*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F]}


def ms(x: float) -> str:
    """A duration given in ms, for evidence text: 3 significant digits, in ms or µs."""
    if abs(x) >= 1:
        return f"{x:.3g} ms" if abs(x) < 1000 else f"{x:,.0f} ms"
    return f"{x * 1e3:.3g} µs"


def fmt(v: Any, digits: int = 2) -> str:
    """A number with `digits` decimals and thousands separators; '—' when missing."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return f"{float(v):,.{digits}f}"


def fmt_sig(v: Any) -> str:
    """Three significant digits (intensities span 0.01 to 10 000 FLOP/byte); '—' if missing."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    return f"{float(v):,.0f}" if abs(float(v)) >= 1000 else f"{float(v):.3g}"


def clip(text: str, n: int | None) -> str:
    """Text cut to n characters with an ellipsis (None: whole)."""
    return text if n is None or len(text) <= n else text[: n - 1] + "…"


def printable(text: str) -> str:
    """Text with its control characters (NUL, ESC, …) shown as U+FFFD."""
    return text.translate(_CONTROL)


def plot_text(text: str) -> str:
    """Text for a plotly label or hover, shown as written: plotly reads a few HTML tags in
    them (<b>, <br>, <a href=…>: a run named with one became a link) and entities."""
    return escape(printable(text), quote=False)


def plural(n: int, word: str, many: str | None = None) -> str:
    """'1 run', '3 runs' ('1 GPU activity', '2 GPU activities' with `many`)."""
    return f"{n:,} {word if n == 1 else many or word + 's'}"


def fmt_bytes(n: float | None) -> str:
    """Bytes in binary units."""
    if n is None:
        return "—"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024:
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.1f} TiB"
