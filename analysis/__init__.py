"""Pure computation over frames read from the store: no Streamlit, no file I/O."""
