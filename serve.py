"""The dashboard's server: `streamlit run serve.py` serves app.py, warmed as it starts.

Streamlit runs the pages' imports, reads a run and runs the rules on the first visit that
needs them (a new user's first page took 3.6-5.0 s on 2 cores, D99). Here a thread started
with the server does that for the newest run (pages._ui.warm_up), while the user opens the
browser; a page that needs a value still being computed waits for it, not computes it twice.
"""

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import streamlit as st


@asynccontextmanager
async def _warm(_app: st.App) -> AsyncIterator[None]:
    from pages._ui import warm_up  # once the runtime has started, for its caches

    threading.Thread(target=warm_up, name="warm-up", daemon=True).start()
    yield


app = st.App("app.py", lifespan=_warm)
