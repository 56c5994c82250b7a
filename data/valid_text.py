"""Text that can be stored and printed: a file name or argument that is not valid UTF-8."""

from __future__ import annotations

import re

_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(text: str) -> str:
    """`text` with each lone surrogate shown as U+FFFD. Python hands a file name's or an
    argument's undecodable bytes over as surrogates (PEP 383); DuckDB, Arrow and a UTF-8
    terminal refuse them, so a name that is stored or shown must be free of them."""
    return _SURROGATE.sub("\ufffd", text)
