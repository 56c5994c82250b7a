"""Recommendations on the 1.3 M-event benchmark run: reading the facts, each rule, the whole
ranking, and the Recommendations page server-side. Median of 5 after one warm-up (page: 3).

Usage: python benchmarks/bench_recommend.py [--data DIR]   (DIR: a store holding the big run;
without it the run is built from benchmarks/out/big_trace.json into a temporary store)
"""

from __future__ import annotations

import json
import time

from analysis_common import ROOT, big_run, page_seconds, timed

from analysis.facts import gather
from analysis.rules.recommend import RULES, recommend

OUT = ROOT / "benchmarks" / "out" / "recommend.json"


def main() -> None:
    s, data, run = big_run("bench-recommend-")
    run_id = str(run["run_id"])
    rows: dict[str, float] = {"gather (reads + kernel work)": timed(lambda: gather(s, run_id))}
    for rule_id, fn in RULES.items():
        # each rule on fresh facts: shared derived values are not already computed
        times = []
        for _ in range(3):
            facts = gather(s, run_id)
            t = time.perf_counter()
            fn(facts)
            times.append(time.perf_counter() - t)
        rows[f"rule {rule_id}"] = sorted(times)[1]
    rows["gather + every rule, ranked"] = timed(lambda: recommend(gather(s, run_id)), n=3)
    import streamlit as st  # noqa: TID251 (empties the pages' caches, as a new server would)

    page = "pages/recommendations.py"
    rows["Recommendations page, first render (server-side)"] = page_seconds(
        data, run_id, page, before_each=st.cache_data.clear
    )
    rows["Recommendations page, cached (server-side)"] = page_seconds(data, run_id, page)
    for name, secs in rows.items():
        print(f"{name:45s} {secs:7.3f} s")
    OUT.write_text(json.dumps({"events": int(run["events_total"]), "seconds": rows}, indent=1))


if __name__ == "__main__":
    main()
