"""The recommendation rules: catalog.py (ids, titles, thresholds, fixes), registry.py (what a
rule returns), one module per family of mechanisms, and recommend.py, which runs them all and
ranks the findings."""
