"""What the validation's evaluation prints and writes: the per-pair table README.md and
BENCHMARKS.md publish, the counts per half, the rivals' table, and each finding's track record
(tools/validation/evaluate.py computes the results they read)."""

from __future__ import annotations

import statistics
from collections.abc import Iterator

from analysis.rules.track_record import (
    MIN_RANGE_PAIRS,
    OrderRecord,
    Record,
    likely_saving_ms,
    ranges_overlap,
)
from tools.validation.evaluate import PairResult
from tools.validation.rivals import SOURCES, rivals_of


def table(results: list[PairResult]) -> str:
    """The Markdown table the README and BENCHMARKS.md publish."""
    head = (
        "| pair | half | planted | rank | estimate (ms) | measured (ms) | step (ms) | "
        "error | within | first | after clean |\n|---|---|---|---|---|---|---|---|---|---|---|"
    )
    rows = []
    for r in sorted(results, key=lambda r: (r.half != "tune", r.pair)):
        est = "—" if r.est_ms is None else f"{r.est_ms:.2f}"
        err = "—" if r.error_ms is None else f"{r.error_ms:+.2f}"
        rank = (
            "—"
            if r.rank is None
            else str(r.rank) + ("" if r.rank == 1 else f" ({', '.join(r.above)} above)")
        )
        rows.append(
            f"| {r.pair} | {r.half} | `{r.planted}` | {rank} | {est} | {r.measured_ms:.2f} | "
            f"{r.step_ms:.2f} | {err} | {'yes' if r.within else 'no'} | "
            f"{'yes' if r.first else 'no'} | {'yes' if r.after_clean else 'no'} |"
        )
    return "\n".join([head, *rows])


def half_counts(results: list[PairResult], half: str) -> str:
    """The line of counts per check for one half, as the closing notes give them."""
    return counts(half, [x for x in results if x.half == half])


def counts(label: str, r: list[PairResult]) -> str:
    """The line of counts per check over some pairs."""
    return (
        f"{label}: {len(r)} pairs; planted first {sum(x.first for x in r)}, "
        f"estimate within {sum(x.within for x in r)}, after clean "
        f"{sum(x.after_clean for x in r)}, no host finding over the headroom "
        f"{sum(not x.over_headroom for x in r)}, all four {sum(x.passed for x in r)}"
    )


def track_record(results: list[PairResult]) -> dict[str, Record]:
    """Per planted finding, how its estimates did on the pairs that planted it: the
    recommendations show this beside each saving (analysis/rules/track_record_h200.py, written
    from it by tools/track_record.py)."""
    out = {}
    for rec_id in sorted({r.planted for r in results}):
        rows = [r for r in results if r.planted == rec_id]
        held = [r for r in rows if r.half == "held-out"]
        errors = [error_pct(r) for r in rows]
        basis, held_basis, deciles = likely_deciles(rows)
        out[rec_id] = Record(
            pairs=len(rows),
            within=sum(r.within for r in rows),
            held_out=len(held),
            held_out_within=sum(r.within for r in held),
            median_error_pct=round(statistics.median(errors)),
            range_pairs=len(basis) if deciles else 0,
            range_held_out=held_basis,  # False without a range
            low_ratio=round(deciles[0], 2) if deciles else None,
            high_ratio=round(deciles[-1], 2) if deciles else None,
        )
    return out


def likely_deciles(
    rows: list[PairResult],
) -> tuple[list[PairResult], bool, list[float] | None]:
    """The pairs a finding's likely range comes from (those that raised it: held out from
    tuning where MIN_RANGE_PAIRS of them did, else all), whether they are the held-out ones,
    and the deciles of measured over estimated saving on them (None: too few pairs)."""
    raised = [r for r in rows if r.est_ms and r.est_ms > 0]
    held = [r for r in raised if r.half == "held-out"]
    basis = held if len(held) >= MIN_RANGE_PAIRS else raised
    if len(basis) < MIN_RANGE_PAIRS:
        return basis, False, None
    ratios = [r.measured_ms / (r.est_ms or 1.0) for r in basis]
    return basis, basis is held, statistics.quantiles(ratios, n=10, method="inclusive")


# The words of the pairs' names that say the change, not the model (`batch-recompute-llama`).
_CHANGE_WORDS = frozenset({
    "alignment", "allocator", "attention", "batch", "batching", "bound", "compile",
    "cudagraph", "dataloader", "decode", "fusion", "graphs", "host", "launch", "layout",
    "optimizer", "pageable", "precision", "preprocess", "recompute", "sync", "tf32",
})  # fmt: skip


def model_family(pair: str) -> str:
    """The model a pair ran, by family: `fusion-compile-gpt2-124m` -> gpt2."""
    return next((w for w in pair.split("-") if w not in _CHANGE_WORDS), pair)


def range_coverage(results: list[PairResult]) -> list[str]:
    """The likely ranges judged on models they were not computed from: for each pair that
    raised a finding, the range from the other models' pairs alone (the same choice of pairs
    as likely_deciles), and whether the pair's measured saving fell inside. One line per
    finding with a range; about 80 % inside is a range that holds."""
    lines = []
    for rec_id in sorted({r.planted for r in results}):
        rows = [r for r in results if r.planted == rec_id]
        if likely_deciles(rows)[2] is None:
            continue
        inside, judged = 0, 0
        for r in (r for r in rows if r.est_ms and r.est_ms > 0):
            others = [x for x in rows if model_family(x.pair) != model_family(r.pair)]
            deciles = likely_deciles(others)[2]
            if deciles is None:
                continue
            judged += 1
            inside += deciles[0] <= r.measured_ms / (r.est_ms or 1.0) <= deciles[-1]
        lines.append(
            f"likely range, {rec_id}: the measured saving inside the range from the other "
            f"models' pairs on {inside} of {judged} pairs"
        )
    return lines


def error_pct(r: PairResult) -> float:
    """|estimate - measured| in % of the measured saving, or of WITHIN_POINTS of the step
    where the saving is smaller (a fix that saved nothing has no error in % of its saving)."""
    scale = max(abs(r.measured_ms), r.points_ms)
    return r.miss_ms / scale * 100


def _rival_rows(results: list[PairResult]) -> Iterator[tuple[str, str, PairResult, PairResult]]:
    """(session, rivalled pair, its own fix's result, a rival fix's result) for every rival
    measured beside a pair's own fix on the pair's before workload."""
    by = {r.pair: r for r in results}
    for n, source in ((n, p) for n, sources in SOURCES.items() for p in sources):
        own = by.get(f"{source}-{n}")
        for rival in rivals_of(source, n):
            other = by.get(rival)
            if own is not None and other is not None:
                yield n, source, own, other


def _ranked_above(own: PairResult, other: PairResult) -> bool:
    return other.planted in own.above or (own.rank is None and other.rank is not None)


def rival_table(results: list[PairResult]) -> str:
    """The rival recordings' question: on each rivalled pair's before workload in a session,
    did the ranking put the fix that measured the larger saving above the other?"""
    rows = []
    for n, source, own, other in _rival_rows(results):
        above = _ranked_above(own, other)
        larger = other.measured_ms > own.measured_ms
        est = [f"{x.est_ms:.2f}" if x.est_ms is not None else "—" for x in (own, other)]
        rows.append(
            f"| {source} ({n}) | {own.step_ms:.2f} | `{own.planted}` {est[0]} / "
            f"{own.measured_ms:.2f} | `{other.planted}` {est[1]} / {other.measured_ms:.2f} | "
            f"{'rival' if above else 'own'} | {'rival' if larger else 'own'} | "
            f"{'yes' if above == larger else 'no'} |"
        )
    head = (
        "| pair | before step (ms) | own fix: estimate / measured (ms) | rival fix: estimate / "
        "measured (ms) | ranked higher | saved more | right |\n|---|---|---|---|---|---|---|"
    )
    return "\n".join([head, *rows])


def order_record(results: list[PairResult], record: dict[str, Record]) -> OrderRecord:
    """On the rival pairs where both fixes were raised with a likely range (the record's, as
    the recommendations show it): how often the one ranked higher measured the larger saving,
    apart for the pairs whose two ranges overlapped (a close call, D88)."""
    tally: dict[bool, list[bool]] = {True: [], False: []}
    for _, _, own, other in _rival_rows(results):
        ranges = [likely_saving_ms(record.get(x.planted), x.est_ms or 0.0) for x in (own, other)]
        if ranges[0] is None or ranges[1] is None:
            continue
        right = _ranked_above(own, other) == (other.measured_ms > own.measured_ms)
        tally[ranges_overlap(ranges[0], ranges[1])].append(right)
    return OrderRecord(
        overlap_pairs=len(tally[True]),
        overlap_right=sum(tally[True]),
        apart_pairs=len(tally[False]),
        apart_right=sum(tally[False]),
    )
