"""How each recommendation's estimate has done against measured savings: the validation
pairs recorded on an H200 (tests/data/validation_h200), each the same workload with one
change, both timed without the profiler. Shown beside every saving, so that a user knows
how far to bank on it; the numbers are in track_record_h200.py, written by
tools/track_record.py from the rules' current results (tests/integration/
test_validation_pairs.py fails when they drift apart)."""

from __future__ import annotations

from dataclasses import dataclass

from analysis.text import plural

# What "within" means, here and in the validation check (tools/validation/evaluate.py).
WITHIN_REL = 0.35  # an estimate is right within 35 % of the measured saving…
WITHIN_POINTS = 5.0  # …or within 5 points of the step


@dataclass(frozen=True, slots=True)
class Record:
    pairs: int  # measured pairs that planted the finding (replicates and rivals counted)
    within: int  # of those, estimates within WITHIN_REL of the saving or WITHIN_POINTS
    held_out: int  # pairs the rules were not tuned on
    held_out_within: int
    # |estimate - measured saving| in % of the saving, or of WITHIN_POINTS of the step where
    # the saving is smaller
    median_error_pct: int


def track_record_text(record: Record | None) -> str:
    """One sentence on a finding's track record (None: no pair planted it)."""
    if record is None:
        return "Not yet checked against a measured before/after pair."
    held = (
        f"held out from tuning: {record.held_out_within} of {record.held_out}"
        if record.held_out
        else "none held out from tuning"
    )
    return (
        f"Checked on {plural(record.pairs, 'measured before/after pair')} on an H200: within "
        f"{WITHIN_REL * 100:g} % of the measured saving (or {WITHIN_POINTS:g} points of the "
        f"step) on {record.within} ({held}); median error {record.median_error_pct} % of the "
        f"saving (of {WITHIN_POINTS:g} % of the step where the saving was smaller)."
    )
