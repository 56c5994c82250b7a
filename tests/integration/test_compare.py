"""Comparing two runs (analysis/compare.py, `python -m analysis.compare`) on the real
before/after pairs of the H200 fixtures: decode_b1 -> decode_b1_cudagraph and the GPT-2 step
fed by a DataLoader with 0 -> 4 workers (the Compare page: tests/pages/test_compare_page.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from helpers.cli import run_module
from helpers.compare import DECODE, LOADER, comparison, metric, pair, side

from analysis.compare import (
    CLASS_COLUMNS,
    METRIC_COLUMNS,
    Comparison,
    compare,
    recommendation_diff,
    to_markdown,
)
from analysis.metrics import COMPARE_METRICS
from analysis.report.sections import saving_text
from data.store import Store


@pytest.fixture(scope="module")
def decode() -> Comparison:
    return comparison(DECODE)


@pytest.fixture(scope="module")
def loader() -> Comparison:
    return comparison(LOADER)


def step_count(s: Store, run_id: str) -> int:
    return int(s.rows("SELECT count(*) AS n FROM steps WHERE run_id = ?", [run_id])[0]["n"])


def gpu_ms(s: Store, run_id: str, where: str) -> float:
    sql = f"SELECT coalesce(sum(dur_ns), 0) AS t FROM gpu_events WHERE run_id = ? AND ({where})"
    return int(s.rows(sql, [run_id])[0]["t"]) / 1e6


@pytest.mark.parametrize("labels", [DECODE, LOADER], ids=["decode", "loader"])
def test_metric_deltas_match_each_runs_report(labels: tuple[str, str]) -> None:
    s, before, after = pair(labels)
    c = comparison(labels)
    rb, ra = (side(label)[0]["metrics"]["overall"] for label in labels)
    assert list(c.metrics.columns) == METRIC_COLUMNS
    assert list(c.metrics["metric"]) == list(COMPARE_METRICS)
    for key in ("step_time_ms", "gpu_busy_pct", "idle_pct", "host_wait_pct", "compute_pct"):
        m = metric(c, key)
        assert m["before"] == pytest.approx(rb[key])
        assert m["after"] == pytest.approx(ra[key])
        assert m["delta"] == pytest.approx(ra[key] - rb[key])
        assert m["delta_pct"] == pytest.approx((ra[key] - rb[key]) / rb[key] * 100)
    for run_id, key, report in ((before, "before", rb), (after, "after", ra)):
        # Every run of the pairs profiled 3 steps on 1 rank.
        assert step_count(s, run_id) == 3
        assert metric(c, "kernels_per_step")[key] == pytest.approx(report["kernel_count"] / 3)
        assert metric(c, "step_time_ms")[key] == pytest.approx(median_step_ms(s, run_id))


def median_step_ms(s: Store, run_id: str) -> float:
    """The README's time per step on the trace, in SQL: a step ends when both its CPU range
    and its GPU work have ended; it runs from the previous step's end (the first from its
    CPU start, or the end of GPU work launched before it); median over steps (1 rank)."""
    sql = """
        WITH e AS (
            SELECT step, ts_ns, gpu_start_ns,
                   greatest(ts_ns + dur_ns, coalesce(gpu_end_ns, 0)) AS end_ns
            FROM steps WHERE run_id = $run),
        pre AS (
            SELECT max(g.ts_ns + g.dur_ns) AS t FROM gpu_events g
            WHERE g.run_id = $run AND g.step IS NULL
              AND g.ts_ns < (SELECT gpu_start_ns FROM e ORDER BY step LIMIT 1))
        SELECT median(span) AS t FROM (
            SELECT end_ns - coalesce(lag(end_ns) OVER (ORDER BY step),
                                     greatest(ts_ns, coalesce((SELECT t FROM pre), 0))) AS span
            FROM e)
    """
    return float(s.rows(sql, {"run": run_id})[0]["t"]) / 1e6


@pytest.mark.parametrize("labels", [DECODE, LOADER], ids=["decode", "loader"])
def test_class_time_adds_up_to_the_stores_gpu_time_per_step(labels: tuple[str, str]) -> None:
    s, before, after = pair(labels)
    c = comparison(labels)
    assert list(c.classes.columns) == CLASS_COLUMNS
    classes = c.classes.set_index("kernel_class")
    for run_id, role in ((before, "before"), (after, "after")):
        steps = step_count(s, run_id)
        col = classes[f"{role}_ms_per_step"]
        assert col.sum() == pytest.approx(gpu_ms(s, run_id, "true") / steps)
        kernels = col.drop(["memcpy", "memset"], errors="ignore").sum()
        assert kernels == pytest.approx(gpu_ms(s, run_id, "kind = 'kernel'") / steps)
        assert col["memcpy"] == pytest.approx(gpu_ms(s, run_id, "kind = 'memcpy'") / steps)
        # cuBLAS on this H200: nvjet_* GEMMs plus cublasLt's split-K reduction.
        gemm = gpu_ms(s, run_id, "name LIKE 'nvjet%' OR name LIKE '%splitKreduce%'")
        assert col["gemm"] == pytest.approx(gemm / steps)
    delta = c.classes["after_ms_per_step"] - c.classes["before_ms_per_step"]
    assert list(c.classes["delta_ms_per_step"]) == pytest.approx(list(delta))
    assert list(c.classes["delta_ms_per_step"].abs()) == sorted(
        c.classes["delta_ms_per_step"].abs(), reverse=True
    )


def test_cuda_graphs_cut_the_decode_step_and_its_host_wait(decode: Comparison) -> None:
    step = metric(decode, "step_time_ms")
    assert step["after"] < 0.1 * step["before"]  # 117 ms -> 9.6 ms on the H200
    assert step["change"] == "better"
    assert metric(decode, "host_wait_pct")["change"] == "better"
    assert metric(decode, "gpu_busy_pct")["after"] > 75
    # The same kernels run (within 5 %), only the launching changed.
    kernel = metric(decode, "kernel_ms_per_step")
    assert abs(kernel["delta_pct"]) < 5
    # The verdict leads with the step without the profiler (the overhead model's: these
    # traces carry no hook timing); on the trace, 117.4 -> 9.6 ms.
    unprof = metric(decode, "unprofiled_step_ms")
    assert unprof["after"] < unprof["before"] < step["before"]
    assert decode.verdict.startswith(
        f"step time {unprof['before']:,.1f} -> {unprof['after']:,.1f} ms unprofiled "
        f"({unprof['delta_pct']:+,.0f} %)"
    )
    assert (round(step["before"], 1), round(step["after"], 1)) == (117.4, 9.6)


def test_modelled_work_metrics_are_not_compared_across_unlike_coverage(
    decode: Comparison, loader: Comparison
) -> None:
    # Graph-replayed kernels have no op shapes: decode_b1_cudagraph models ~0 % of its time.
    cover = metric(decode, "modelled_time_pct")
    assert cover["before"] > 99
    assert cover["after"] < 1
    for key in ("achieved_tflops", "mfu_pct", "hbm_bw_util_pct"):
        assert metric(decode, key)["change"] == "not comparable"
    # Same model, same shapes: the loader pair compares, and MFU rises with the step rate.
    assert metric(loader, "mfu_pct")["change"] == "better"


def test_four_workers_remove_the_data_loader_wait(loader: Comparison) -> None:
    step = metric(loader, "step_time_ms")
    assert step["delta_pct"] < -70  # 353 ms -> 71 ms
    assert metric(loader, "host_wait_pct")["change"] == "better"
    # The GPU work is identical: same kernels per step, GEMM time within 2 %.
    assert metric(loader, "kernels_per_step")["change"] == "same"
    gemm = loader.classes.set_index("kernel_class").loc["gemm"]
    assert abs(gemm["delta_pct"]) < 2


def test_cuda_graphs_make_the_launch_bound_finding_go_away(decode: Comparison) -> None:
    recs = decode.recommendations.set_index("id")
    assert recs.loc["cuda-graphs", "status"] == "gone"
    # level with decode-batching (63.9 against 65.0 ms since D94; 71.3 against 71.2 before)
    assert recs.loc["cuda-graphs", "before_rank"] <= 2
    assert recs.loc["cuda-graphs", "before_saving_pct"] > 50  # most of a launch-bound step
    assert f"gone: {recs.loc['cuda-graphs', 'title']}" in decode.verdict
    gone = decode.to_json()["recommendations"]["gone"]
    assert "cuda-graphs" in [r["id"] for r in gone]


def test_findings_a_graph_replay_hides_are_unseen_not_gone(decode: Comparison) -> None:
    """decode_b1_cudagraph's kernels are replayed from a graph: no op shapes, so the
    shape-based decode findings cannot be checked there (batching would still pay)."""
    recs = decode.recommendations.set_index("id")
    assert recs.loc["decode-batching", "status"] == "unseen"
    assert str(recs.loc["decode-batching", "title"]) not in decode.verdict


def test_data_loader_workers_make_the_starvation_finding_go_away(loader: Comparison) -> None:
    recs = loader.recommendations.set_index("id")
    assert recs.loc["gpu-starvation", "status"] == "gone"
    assert "gpu-starvation" not in {r["id"] for r in side(LOADER[1])[0]["recommendations"]}
    assert f"gone: {recs.loc['gpu-starvation', 'title']}" in loader.verdict
    # Every id lands in exactly one of gone/new/kept.
    before = {r["id"] for r in side(LOADER[0])[0]["recommendations"]}
    after = {r["id"] for r in side(LOADER[1])[0]["recommendations"]}
    assert set(recs.index[recs["status"] == "kept"]) == before & after
    assert set(recs.index[recs["status"] == "new"]) == after - before
    assert len(recs) == len(before | after)


def test_a_report_without_recommendations_has_none_to_diff() -> None:
    (rb, cb), (ra, ca) = side(DECODE[0]), side(DECODE[1])
    strip = {k: v for k, v in rb.items() if k != "recommendations"}
    c = compare(strip, {**ra, "recommendations": []}, cb, ca)
    assert c.recommendations.empty
    assert c.to_json()["recommendations"] == {"gone": [], "unseen": [], "new": [], "kept": []}
    assert "gone" not in c.verdict


def test_recommendation_diff_by_id() -> None:
    def rec(rid: str, pct: float) -> dict[str, Any]:
        return {"id": rid, "title": rid.title(), "est_saving_pct": pct, "est_saving_ms": pct / 10,
                "confidence": "high"}  # fmt: skip

    before = {"recommendations": [rec("cuda-graphs", 80.0), rec("host-sync", 5.0)]}
    after = {"recommendations": [rec("host-sync", 2.0), rec("kernel-fusion", 10.0)]}
    d = recommendation_diff(before, after).set_index("id")
    assert d.loc["cuda-graphs", "status"] == "gone"
    assert d.loc["kernel-fusion", "status"] == "new"
    kept = d.loc["host-sync"]
    assert kept["status"] == "kept"
    assert (kept["before_rank"], kept["after_rank"]) == (2, 1)
    assert (kept["before_saving_pct"], kept["after_saving_pct"]) == (5.0, 2.0)
    assert pd.isna(d.loc["cuda-graphs", "after_saving_ms"])


def test_a_gone_finding_keeps_its_likely_range_and_bad_ranges_are_none() -> None:
    def rec(rid: str, likely: object) -> dict[str, Any]:
        return {"id": rid, "title": rid, "est_saving_pct": 10.0, "est_saving_ms": 2.0,
                "confidence": "high", "likely_saving_ms": likely}  # fmt: skip

    recs = [rec("cuda-graphs", [1.5, 2.5]), rec("host-sync", "1-2"),
            rec("small-batch", [1.0, None]), rec("kernel-fusion", None)]  # fmt: skip
    before = {"recommendations": recs}
    d = recommendation_diff(before, {"recommendations": []}).set_index("id")
    assert (
        d.loc["cuda-graphs", "before_likely_low_ms"],
        d.loc["cuda-graphs", "before_likely_high_ms"],
    ) == (1.5, 2.5)
    for rid in ("host-sync", "small-batch", "kernel-fusion"):
        assert d.loc[rid, ["before_likely_low_ms", "before_likely_high_ms"]].isna().all(), rid
    # The reports read the range the same way: a malformed one is left out, not an error.
    assert "(2.00 ms per step; likely 1.50–2.50 ms)" in saving_text(recs[0])
    for bad in recs[1:]:
        assert "(2.00 ms per step) ·" in saving_text(bad)


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return run_module("analysis.compare", *args)


def test_cli_json_by_run_names(decode: Comparison, tmp_path: Path) -> None:
    s, before, _ = pair(DECODE)
    out = tmp_path / "c.json"
    proc = cli("decode_b1", "decode_b1_cudagraph", "--format", "json", "-o", out,
               "--data", s.data_dir)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["before"]["id"] == before
    assert doc["after"]["name"] == "decode_b1_cudagraph"
    assert doc["verdict"] == decode.verdict
    steps = next(m for m in doc["metrics"] if m["metric"] == "step_time_ms")
    assert steps["after"] == pytest.approx(metric(decode, "step_time_ms")["after"])
    assert [r["id"] for r in doc["recommendations"]["gone"]] == list(
        decode.recommendations.loc[decode.recommendations["status"] == "gone", "id"]
    )


def test_markdown_holds_the_verdict_and_every_table(decode: Comparison) -> None:
    md = to_markdown(decode)
    assert f"**{decode.verdict}**" in md
    assert "| time per step, profiled (ms) | 117.4 | 9.555 |" in md
    assert "| cuda-graphs |" in md.split("## Recommendations gone")[1].split("##")[0]
    for title in ("## Metrics", "## GPU time per step by kernel class", "## Recommendations new"):
        assert title in md


def test_cli_unknown_run_is_one_line(tmp_path: Path) -> None:
    Store(tmp_path).close()
    proc = cli("no-such-run", "other", "--data", tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"error: no-such-run: no run with this id or name in {tmp_path}"
    ]
