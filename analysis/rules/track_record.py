"""How each recommendation's estimate has done against measured savings: the validation
pairs recorded on an H200 (tests/data/validation_h200), each the same workload with one
change, both timed without the profiler. Shown beside every saving, so that a user knows
how far to bank on it; the numbers are in track_record_h200.py, written by
tools/track_record.py from the rules' current results (tests/integration/
test_validation_pairs.py fails when they drift apart)."""

from __future__ import annotations

from dataclasses import dataclass

from analysis.text import ms, plural

# What "within" means, here and in the validation check (tools/validation/evaluate.py).
WITHIN_REL = 0.35  # an estimate is right within 35 % of the measured saving…
WITHIN_POINTS = 5.0  # …or within 5 points of the step
# The likely range (measured over estimated saving, 10th to 90th percentile) is given only
# for a finding raised on this many measured pairs: a decile of fewer is one pair's noise.
MIN_RANGE_PAIRS = 8


@dataclass(frozen=True, slots=True)
class Record:
    pairs: int  # measured pairs that planted the finding (replicates and rivals counted)
    within: int  # of those, estimates within WITHIN_REL of the saving or WITHIN_POINTS
    held_out: int  # pairs the rules were not tuned on
    held_out_within: int
    # |estimate - measured saving| in % of the saving, or of WITHIN_POINTS of the step where
    # the saving is smaller
    median_error_pct: int
    # measured saving / estimate on the pairs that raised it (MIN_RANGE_PAIRS or more; the
    # held-out ones where they are enough), 10th and 90th percentiles; None for fewer pairs
    range_pairs: int = 0
    range_held_out: bool = False
    low_ratio: float | None = None
    high_ratio: float | None = None


def track_record_text(record: Record | None, est_saving_ms: float) -> str:
    """A finding's track record (None: no pair planted it) and, where the pairs give one,
    the range its estimate of this run's saving is likely to measure."""
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
        + _likely_range(record, est_saving_ms)
    )


def likely_saving_ms(record: Record | None, est_saving_ms: float) -> tuple[float, float] | None:
    """The range this estimate is likely to measure: the estimate times the record's 10th and
    90th percentiles of measured over estimated saving (not below 0: a noisy pair can measure
    less than nothing); None without a range."""
    if record is None or record.low_ratio is None or record.high_ratio is None:
        return None
    if est_saving_ms <= 0:
        return None
    return max(record.low_ratio * est_saving_ms, 0.0), record.high_ratio * est_saving_ms


def _likely_range(record: Record, est_saving_ms: float) -> str:
    likely = likely_saving_ms(record, est_saving_ms)
    if likely is None:
        return ""
    pairs = (
        "held out from tuning that raised it"
        if record.range_held_out
        else "that raised it (tuned and held out)"
    )
    return (
        f" On the {record.range_pairs} pairs {pairs}, "
        f"the measured saving was {record.low_ratio:.2f}–{record.high_ratio:.2f}× the "
        f"estimate (10th to 90th percentile), so this run's {ms(est_saving_ms)} is likely to "
        f"measure {ms(likely[0])} to {ms(likely[1])}."
    )


@dataclass(frozen=True, slots=True)
class OrderRecord:
    """How often the ranking put first the fix that measured the larger saving, on the rival
    pairs (two fixes made to one "before" workload in one session, both measured; tools/
    validation/rivals.py), apart for the pairs whose two likely ranges overlapped."""

    overlap_pairs: int
    overlap_right: int
    apart_pairs: int
    apart_right: int


def ranges_overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Whether two likely ranges (low, high) share a value: then either fix may save more."""
    return a[0] <= b[1] and b[0] <= a[1]


def close_call_text(above: list[tuple[int, str]], order: OrderRecord) -> str:
    """What a finding whose likely range overlaps those of higher-ranked ones ((rank, id) each)
    tells the user: the order between them is uncertain, with how it did on measured pairs."""
    names = ", ".join(f"#{rank} ({rec_id})" for rank, rec_id in above)
    return (
        f"A close call with {names}: the likely savings overlap, so which fix saves more is "
        f"uncertain. On the measured pairs of two fixes made to one workload, the ranking put "
        f"the larger saving first in {order.overlap_right} of {order.overlap_pairs} where the "
        f"likely ranges overlapped, and in {order.apart_right} of {order.apart_pairs} where "
        "they did not: try both, or time each fix."
    )
