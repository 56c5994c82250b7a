"""Write analysis/rules/track_record_h200.py: how each recommendation's estimate did on the
H200 validation pairs (tools/validation/evaluate.py's results, as the validation test
computes them), which the recommendations show beside every saving.

    python3 tools/track_record.py [STORE_DIR]    # from the repo root, ~4 minutes on 2 cores

Run it after a change to a rule; tests/integration/test_validation_pairs.py fails until the
file matches the rules' current results.
"""

from __future__ import annotations

import sys
from dataclasses import fields
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analysis.rules.track_record import OrderRecord, Record
from tools.validation import evaluate as ev
from tools.validation import summaries

OUT = ev.REPO / "analysis" / "rules" / "track_record_h200.py"
HEAD = '''"""The track record of each recommendation on the H200 validation pairs
(analysis/rules/track_record.py). Written by `python3 tools/track_record.py` from the rules'
results on tests/data/validation_h200: not edited by hand."""

from analysis.rules.track_record import OrderRecord, Record

TRACK_RECORD = {
'''


def main() -> None:
    workloads = ev.summary()
    facts_of = ev.scratch_store(Path(sys.argv[1]) if len(sys.argv) > 1 else None, workloads)
    results = ev.evaluate(facts_of, workloads)
    record = summaries.track_record(results)
    write(record, summaries.order_record(results, record))


def _constructor(obj: Record | OrderRecord, indent: str) -> str:
    """`obj` as the call that builds it, a field a line (every field: a new one is written)."""
    args = "".join(f"{indent}    {f.name}={getattr(obj, f.name)},\n" for f in fields(obj))
    return f"{type(obj).__name__}(\n{args}{indent})"


def write(record: dict[str, Record], order: OrderRecord) -> None:
    rows = [f'    "{rec_id}": {_constructor(r, "    ")},\n' for rec_id, r in record.items()]
    tail = (
        "}\n\n# The ranking's order on the rival pairs, by whether the likely ranges overlap\n"
        f"ORDER_RECORD = {_constructor(order, '')}\n"
    )
    OUT.write_text(HEAD + "".join(rows) + tail)
    print(f"wrote {OUT.relative_to(ev.REPO)}: {len(rows)} recommendations")


if __name__ == "__main__":
    main()
