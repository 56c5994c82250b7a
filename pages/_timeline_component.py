"""The timeline's browser component (pages/_timeline/: one HTML file, one JS file, nothing
fetched): declared once per server process, when this module is first imported."""

from pathlib import Path
from typing import Any

import streamlit.components.v1 as components

_COMPONENT = components.declare_component("timeline", path=str(Path(__file__).parent / "_timeline"))


def timeline(payload: dict[str, Any], key: str) -> Any:
    """Draw `payload` (analysis.timeline_view.payload); returns the last view the user sent:
    {t0, t1 (µs from the run's origin), seq, sel}, or None before the first."""
    return _COMPONENT(payload=payload, key=key, default=None)
