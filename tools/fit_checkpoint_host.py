"""Fit memory-headroom's `checkpoint_host_factor` (D87) on the validation pairs, and state
its error on the pairs it was not fitted to.

The checkpointing estimate counts the recomputation's GPU time and the checkpoint's host time
without the profiler (D65); the checkpointed forward's own ops also run slower under the
saved-tensor hooks, which no op on the trace separates. The factor scales that host time: the
one with the least summed |error| over the tune half's checkpointing pairs (memory-headroom
planted, recomputed ops on the before run) is the fit; the held-out pairs' errors are printed
beside it, not used.

Usage: python3 tools/fit_checkpoint_host.py [STORE_DIR]   (a scratch store; made when missing)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analysis.rules import memory
from analysis.rules.catalog import CATALOG
from tools.validation import evaluate as ev

FACTORS = [round(1.0 + 0.1 * i, 1) for i in range(11)]


def main() -> None:
    workloads = ev.summary()
    facts_of = ev.scratch_store(Path(sys.argv[1]) if len(sys.argv) > 1 else None, workloads)
    current = CATALOG["memory-headroom"].thresholds["checkpoint_host_factor"]
    rows = []
    for pair in ev.pairs(workloads):
        if ev.planted_of(workloads, pair) != "memory-headroom":
            continue
        before = ev.runs_of(pair)[0]
        facts = facts_of(before)
        found, model = memory._recompute(facts, 0.0), facts.step_model
        if found is None or model is None:  # an allocator pair: no checkpointing
            continue
        measured = ev.measured_saving(workloads, pair)
        tolerance = ev.tolerance_ms(measured, ev.unprofiled_ms(workloads[before]))
        rows.append((pair, ev.half_of(pair), model, found.gpu_ms, found.host_ms / current,
                     measured, tolerance))  # fmt: skip
    table: dict[float, dict[str, tuple[int, int, float]]] = {}
    for f in FACTORS:
        for half in ("tune", "held-out"):
            errors = [(abs(m.saving(g, h * f) - meas), tol)
                      for _, hf, m, g, h, meas, tol in rows if hf == half]  # fmt: skip
            table.setdefault(f, {})[half] = (
                sum(e <= tol for e, tol in errors),
                len(errors),
                sum(e for e, _ in errors),
            )
    fit = min(FACTORS, key=lambda f: table[f]["tune"][2])
    for f in FACTORS:
        cells = "  ".join(f"{half}: within {w} of {n}, summed |error| {s:6.1f} ms"
                          for half, (w, n, s) in table[f].items())  # fmt: skip
        print(f"factor {f:.1f}  {cells}{'  <- fit (tune)' if f == fit else ''}")
    print(f"\ncatalog: {current}; per pair at 1.0 -> {fit}:")
    for pair, half, m, g, h, meas, tol in rows:
        a, b = m.saving(g, h), m.saving(g, h * fit)
        print(
            f"  {pair:26s} {half:9s} measured {meas:6.2f}  estimate {a:6.2f} -> {b:6.2f}  "
            f"within {abs(a - meas) <= tol} -> {abs(b - meas) <= tol}"
        )


if __name__ == "__main__":
    main()
