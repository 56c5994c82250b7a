"""The recommendations against the H200 validation pairs: estimated vs measured saving per pair.

Ingests every run of tests/data/validation_h200 (tools/record_validation_pairs.py recorded
them; each tagged with its measured unprofiled step) into a scratch store, ranks each
"before" run's findings, and prints the table README.md and BENCHMARKS.md publish (per pair:
the half, the planted finding's rank and estimate, the measured saving, whether the estimate
is within 35 % or 5 points of the step, whether the planted finding ranks first or behind
only findings measured to save more on the same model, whether the "after" run is clean),
the counts per half, the rival recordings' table (on one before run, the pair's own
fix against the fix of a finding ranked above it: which ranked higher, which saved more), and
the unprofiled step's error from the hook and from the
profiler-overhead model. Pure analysis: no timing, so the machine's load does not matter.

    python3 benchmarks/bench_validation.py [STORE_DIR]    # from the repo root, ~3 minutes
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.validation import evaluate as ev
from tools.validation import summaries
from tools.validation.fresh_ids import ELEVENTH, FOURTEENTH, FRESH, TENTH, TWELFTH
from tools.validation.rivals import FIFTEENTH, THIRTEENTH
from tools.validation.step_errors import step_error_summary, step_errors


def main() -> None:
    workloads = ev.summary()
    facts_of = ev.scratch_store(Path(sys.argv[1]) if len(sys.argv) > 1 else None, workloads)
    results = ev.evaluate(facts_of, workloads)
    print(summaries.table(results))
    print()
    for half in ("tune", "held-out"):
        print(summaries.half_counts(results, half))
    for label, ids in (
        ("ninth recording (new models; D81 retuned two pairs, D83 three)", FRESH),
        ("tenth recording (new models, blind to D81; D82 and D83 retuned two each)", TENTH),
        ("eleventh recording (held out, new models, judges D81 and D82)", ELEVENTH),
        ("twelfth recording (held out, the eleventh's models: rivals, judges D83)", TWELFTH),
        (
            "thirteenth recording (rivals on ten pairs' before workloads, beside their own fix)",
            THIRTEENTH,
        ),
        ("fourteenth recording (held out, new allocator workloads, judges D86)", FOURTEENTH),
        ("fifteenth recording (held out, rivals on the fourteenth's, judges D88)", FIFTEENTH),
    ):
        print(summaries.counts(label, [r for r in results if r.pair in ids]))
    print()
    print(summaries.rival_table(results))
    order = summaries.order_record(results, summaries.track_record(results))
    print(
        f"close calls (D88): on the rival pairs where both findings have a likely range, the "
        f"order was right on {order.overlap_right} of {order.overlap_pairs} whose ranges "
        f"overlap and {order.apart_right} of {order.apart_pairs} whose ranges do not"
    )
    print()
    print("\n".join(summaries.range_coverage(results)))
    for pair, why in ev.EXCLUDED.items():
        print(f"left out: {pair}: {why}")
    print()
    print(step_error_summary(step_errors(facts_of, workloads)))


if __name__ == "__main__":
    main()
