"""Recommendations: what to change first, ranked by estimated time saved per step."""

import pandas as pd
import streamlit as st

from analysis.rules.catalog import CATALOG
from analysis.rules.recommend import MINOR_PCT, Recommendation
from analysis.text import ms
from data.errors import DashError
from pages._ui import md, ranked, require_run, show_error

CONFIDENCE_BADGE = {"high": ":green-badge[high confidence]",
                    "medium": ":orange-badge[medium confidence]",
                    "low": ":gray-badge[low confidence]"}  # fmt: skip


def likely_text(r: Recommendation) -> str:
    """'3.9–6.2 ms': the range the saving is likely to measure (its track record), or —."""
    if r.likely_saving_ms is None:
        return "—"
    low, high = r.likely_saving_ms
    return f"{ms(low)} – {ms(high)}"


def close_ranks(r: Recommendation, ranking: list[Recommendation]) -> str:
    """'#1, #2': the ranks of the findings above `r` whose likely savings overlap its own."""
    ids = [x.id for x in ranking]
    return ", ".join(f"#{ids.index(i) + 1}" for i in r.close_to if i in ids)


def show_minor(minor: list[Recommendation]) -> None:
    """The findings under MINOR_PCT of the step, listed apart."""
    if not minor:
        return
    with st.expander(f"Minor findings ({len(minor)}): under {MINOR_PCT} % of the step, not ranked"):
        st.dataframe(
            pd.DataFrame(
                {
                    "recommendation": [r.title for r in minor],
                    "id": [r.id for r in minor],
                    "saving per step": [ms(r.est_saving_ms) for r in minor],
                    "% of step": [round(r.est_saving_pct, 3) for r in minor],
                }
            ),
            hide_index=True,
        )


s, run_id = require_run()
run = s.run_summary(run_id)
st.title("Recommendations")
try:
    basis, all_recs, all_behind = ranked(run_id)
except DashError as e:
    show_error(e)
st.caption(
    f"{basis} · savings are per step and per rank, against the step without the profiler; "
    "they overlap (fixing one changes the others), so they rank but do not add up."
)
recs = [r for r in all_recs if not r.minor]
behind = [b for r, b in zip(all_recs, all_behind, strict=True) if not r.minor]
minor = [r for r in all_recs if r.minor]
if not recs:
    st.success(
        f"None of the {len(CATALOG)} rules found something worth changing in this run "
        f"(a saving of {MINOR_PCT} % of the step or more; thresholds: README, "
        "Recommendations).",
        icon="✅",
    )
    show_minor(minor)
    st.stop()

table = pd.DataFrame(
    {
        # the rank in the title, not a column of its own: the width went to the bars
        "recommendation": [f"{i}. {r.title}" for i, r in enumerate(recs, 1)],
        "id": [r.id for r in recs],
        "saving": [ms(r.est_saving_ms) for r in recs],
        "likely": [likely_text(r) for r in recs],
        "% of step": [r.est_saving_pct for r in recs],
        "confidence": [r.confidence for r in recs],
        "close to": [close_ranks(r, recs) for r in recs],
    }
)
st.dataframe(
    table,
    hide_index=True,
    # Short labels, their meaning in the help: at 1400 px longer ones hid the last column.
    column_config={
        "saving": st.column_config.TextColumn(help="Per step, without the profiler"),
        "likely": st.column_config.TextColumn(
            help="This saving times the 10th-90th percentile of measured / estimated saving "
            "on this finding's H200 before/after pairs"
        ),
        # 104 px and whole per cents: in a "small" column the label "53.8 %" left the bar a few
        # pixels (a sliver); the card gives the decimal
        "% of step": st.column_config.ProgressColumn(
            format="%.0f %%", min_value=0, max_value=100, width=104
        ),
        "close to": st.column_config.TextColumn(
            help="Higher-ranked findings whose likely savings overlap this one's: which of "
            "them saves more is uncertain"
        ),
    },
)

for i, (r, (top, first)) in enumerate(zip(recs, behind, strict=True), 1):
    with st.container(border=True):
        head, saving = st.columns([4, 1])
        head.subheader(f"{i}. {md(r.title, None)}", anchor=r.id)
        head.markdown(f"`{r.id}` {CONFIDENCE_BADGE[r.confidence]}")
        if r.alternative_of:
            head.caption(
                f"An alternative to {r.alternative_of}: the same kernels, so the two savings "
                "do not add up."
            )
        saving.metric(
            "Saving per step",
            ms(r.est_saving_ms),
            f"step time −{r.est_saving_pct:.1f} %",
            # green: Streamlit reads the sign from a leading "-", which this text has not
            delta_color="normal",
            delta_arrow="off",  # the sign says it: an arrow beside "−" read as a double minus
        )
        if r.likely_saving_ms is not None:
            saving.caption(f"likely {likely_text(r)}")
        # Evidence names ops and kernels (`__next__`, templates with `*`): literal text.
        st.markdown("\n".join(f"- {md(e)}" for e in r.evidence))
        st.caption(md(r.track_record, None))
        if r.close_call:
            st.info(md(r.close_call, None), icon=":material/balance:")
        with st.expander("Why this saving"):
            st.markdown(md(r.saving_basis, None))
            st.markdown(md(r.why, None))
            st.caption(
                md(f"Detects: {CATALOG[r.id].detects}. Estimate: {CATALOG[r.id].saving}.", None)
            )
        st.code(r.fix, language="python")
        if first is not None:
            with st.expander(f"Kernels and ops behind it ({int(top['count'].sum()):,} kernels)"):
                st.dataframe(
                    top,
                    hide_index=True,
                    column_config={
                        "count": st.column_config.NumberColumn("kernels", format="%d"),
                        "ms_per_step": st.column_config.NumberColumn("ms per step", format="%.3f"),
                    },
                )
                links = st.columns(2)
                links[0].page_link(
                    "pages/timeline.py", label="Show them in the timeline",
                    icon=":material/timeline:",
                    query_params={"run": run_id, "t0_ns": first - 200_000,
                                  "t1_ns": first + 800_000, "rec": r.id,
                                  "highlight": list(dict.fromkeys(top["kernel"]))},
                )  # fmt: skip
                links[1].page_link(
                    "pages/roofline.py", label="See these ops on the roofline",
                    icon=":material/show_chart:",
                    query_params={"run": run_id, "ops": list(r.ops)},
                )  # fmt: skip

show_minor(minor)
st.page_link("pages/report.py", label="Export this as a report (HTML, Markdown, JSON, PDF)",
             icon=":material/download:")  # fmt: skip
