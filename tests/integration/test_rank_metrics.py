"""The report's per-rank metrics in one pass equal the whole-run functions on each rank's
rows (analysis.rank_metrics), on the real 2-rank DDP recording."""

from __future__ import annotations

from pathlib import Path

from helpers.paths import SAMPLES

from analysis import roofline
from analysis.facts import gather
from analysis.overview import step_times
from analysis.rank_metrics import rank_compute_metrics, rank_step_ms
from collectors.ingest import ingest
from data.store import Store


def test_per_rank_metrics_equal_the_whole_run_functions_per_rank(tmp_path: Path) -> None:
    run_id = ingest([SAMPLES / "ddp_gpt_bf16_2rank"], data_dir=tmp_path)
    facts = gather(Store(tmp_path), run_id)
    work, steps, events = facts.all_work, facts.steps, facts.events
    compute = rank_compute_metrics(work, steps, facts.spec)
    step_ms = rank_step_ms(steps, events)
    assert sorted(compute) == sorted(step_ms) == [0, 1]
    for rank in (0, 1):
        mine_steps = steps[steps["rank"] == rank]
        expected = roofline.run_compute_metrics(work[work["rank"] == rank], mine_steps, facts.spec)
        assert compute[rank] == expected
        assert compute[rank]["achieved_tflops"]  # a real number, not a missing one
        whole = step_times(mine_steps, events[events["rank"] == rank])
        assert step_ms[rank] == list(whole["step_time_ms"])
