"""Every real trace ingests, and what the store holds matches an independent raw-JSON count.

The store side is the product (msgspec + Arrow + DuckDB); the expected side is helpers.raw_trace's
stdlib counter (json with Decimal numbers). Times are compared exactly, in integer ns.
Each run is ingested once into a module-wide store; the raw counts run in two worker
processes meanwhile, so the whole module costs about one pass over the traces.
"""

from __future__ import annotations

import bisect
import json
import multiprocessing
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from decimal import Decimal

import pytest
from helpers.raw_trace import RawRank, raw_run
from helpers.traces import fixture_runs, sample_runs

from collectors.ingest import ingest
from data.store import Store

RUNS = {r.label: r for r in [*sample_runs(), *fixture_runs()]}
LABELS = list(RUNS)
# Recorded on our own H200 with a torch that links every kernel to its launch.
H200_LABELS = [lb for lb in LABELS if lb.startswith(("h200/", "samples/"))]


@dataclass(repr=False)
class Ingested:
    store: Store
    run_ids: dict[str, str]
    errors: dict[str, BaseException]
    raw: dict[str, list[RawRank]]
    _cache: dict[str, dict[str, list[tuple]]] = field(default_factory=dict)

    def run_id(self, label: str) -> str:
        if label in self.errors:
            pytest.fail(f"{label} did not ingest: {self.errors[label]!r}")
        return self.run_ids[label]

    def rows(self, sql: str, *params: object) -> list[tuple]:
        with self.store.cursor() as cur:
            return cur.execute(sql, list(params)).fetchall()

    def of_run(self, sql: str, label: str) -> list[tuple]:
        """Rows of `sql` (first column run_id, not returned) for one run, in the query's order.

        Each distinct query runs once over all runs and is cached: one scan instead of one
        per test keeps ~250 tests fast."""
        if sql not in self._cache:
            grouped: dict[str, list[tuple]] = {}
            for row in self.rows(sql):
                grouped.setdefault(row[0], []).append(tuple(row[1:]))
            self._cache[sql] = grouped
        return self._cache[sql].get(self.run_id(label), [])


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ingested]:
    data = tmp_path_factory.mktemp("fixture_store")
    order = sorted(RUNS.values(), key=lambda r: -r.size)  # biggest first: balances the pool
    run_ids: dict[str, str] = {}
    errors: dict[str, BaseException] = {}
    # spawn, not fork: this process already runs DuckDB threads
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {r.label: pool.submit(raw_run, r.paths) for r in order}
        for r in order:
            try:
                run_ids[r.label] = ingest(list(r.paths), data_dir=data)
            except Exception as e:  # reported by the tests of that run
                errors[r.label] = e
        raw = {label: f.result() for label, f in futures.items()}
    store = Store(data)
    yield Ingested(store, run_ids, errors, raw)
    store.close()


def test_run_list_is_complete() -> None:
    assert any(lb.startswith("samples/") for lb in LABELS)
    assert "samples/ddp_gpt_bf16_2rank/" in RUNS
    assert "foreign/hta/trace_filter/" in RUNS
    assert not any(lb.startswith("foreign/hta/trace_filter/sampled") for lb in LABELS)
    assert sum(lb.startswith("h200/") for lb in LABELS) == 9
    assert sum(lb.startswith("foreign/") for lb in LABELS) == 15


@pytest.mark.parametrize("label", LABELS)
def test_run_row(ingested: Ingested, label: str) -> None:
    run_id = ingested.run_id(label)
    raw = ingested.raw[label]
    s = ingested.store.run_summary(run_id)
    assert s["rank_count"] == len(raw) == len(RUNS[label].files)
    first = RUNS[label].paths[0]
    assert s["name"] == first.name.removesuffix(".json.gz").removesuffix(".pt.trace")
    assert s["kernel_count"] == sum(r.kernels for r in raw)
    assert s["source"] == [str(p) for p in RUNS[label].paths]
    assert s["events_total"] == sum(r.events for r in raw)
    # Real traces are well-formed: nothing may be reported malformed.
    assert s["events_malformed"] == 0, ingested.of_run(
        "SELECT run_id, malformed_examples FROM ranks", label
    )
    names = {n for r in raw for n in r.device_names}
    if any(r.kernels for r in raw) and names:
        assert s["device_name"] in names
    elif not names:
        assert s["device_name"] is None  # e.g. trace_filter: no deviceProperties at all


@pytest.mark.parametrize("label", LABELS)
def test_kernel_count_and_exact_total_time(ingested: Ingested, label: str) -> None:
    run_id = ingested.run_id(label)
    raw = ingested.raw[label]
    ((count, total),) = ingested.rows(
        "SELECT count(*), sum(dur_ns) FROM gpu_events WHERE run_id=? AND kind='kernel'", run_id
    )
    assert count == sum(r.kernels for r in raw)
    assert (total or 0) == sum(r.kernel_dur_ns for r in raw)
    per_rank = ingested.of_run(
        "SELECT run_id, rank, count(*), sum(dur_ns) FROM gpu_events WHERE kind='kernel' "
        "GROUP BY ALL ORDER BY ALL",
        label,
    )
    assert per_rank == sorted((r.rank, r.kernels, r.kernel_dur_ns) for r in raw if r.kernels)


@pytest.mark.parametrize("label", LABELS)
def test_memcpy_and_memset_counts(ingested: Ingested, label: str) -> None:
    raw = ingested.raw[label]
    got = {
        (k, rank): (n, d)
        for k, rank, n, d in ingested.of_run(
            "SELECT run_id, kind, rank, count(*), sum(dur_ns) FROM gpu_events "
            "WHERE kind IN ('memcpy', 'memset') GROUP BY ALL",
            label,
        )
    }
    for r in raw:
        assert got.get(("memcpy", r.rank), (0, 0)) == (r.memcpy, r.memcpy_dur_ns)
        assert got.get(("memset", r.rank), (0, None))[0] == r.memset


@pytest.mark.parametrize("label", LABELS)
def test_rank_from_distributed_info_or_file_name(ingested: Ingested, label: str) -> None:
    raw = ingested.raw[label]
    got = ingested.of_run("SELECT run_id, file_name, rank FROM ranks ORDER BY ALL", label)
    assert got == sorted((r.file_name, r.rank) for r in raw)


@pytest.mark.parametrize("label", LABELS)
def test_kernels_linked_to_launching_call(ingested: Ingested, label: str) -> None:
    """launch_api is the runtime/driver call with the kernel's correlation id, where the trace
    has one; kernels with no such call in the trace stay unlinked (NULL), none invented."""
    expected: Counter[str | None] = Counter()
    for r in ingested.raw[label]:
        expected.update(r.kernel_launch_api)
    sql = "SELECT run_id, launch_api, count(*) FROM gpu_events WHERE kind='kernel' GROUP BY ALL"
    got = Counter(dict(ingested.of_run(sql, label)))
    assert got == expected


@pytest.mark.parametrize("label", H200_LABELS)
def test_h200_kernels_linked_unless_launched_before_the_window(
    ingested: Ingested, label: str
) -> None:
    """On our H200 traces every kernel is linked to its launch call, except kernels launched
    during the profiler's warm-up, whose launch call is not in the trace at all: those have a
    correlation id lower than any runtime call of their rank (resnet50: 216 of 2223;
    train_gpt2_bf16_tuned: 2; ddp rank 0: 3; the others: none)."""
    ((n, linked, with_ts, unexplained),) = ingested.of_run(
        "WITH first AS (SELECT run_id, rank, min(correlation) AS c FROM runtime_calls "
        "               GROUP BY ALL) "
        "SELECT run_id, count(*), count(launch_api), count(launch_ts_ns), "
        "       count(*) FILTER (WHERE launch_api IS NULL AND g.correlation >= f.c) "
        "FROM gpu_events g JOIN first f USING (run_id, rank) WHERE kind = 'kernel' "
        "GROUP BY run_id",
        label,
    )
    assert n > 0
    assert with_ts == linked
    assert unexplained == 0, f"{unexplained} of {n} kernels launched in the window are unlinked"
    assert linked >= 0.9 * n


def test_cudagraph_kernels_launched_by_graph_launch(ingested: Ingested) -> None:
    label = "h200/decode_b1_cudagraph.pt.trace.json.gz"
    run_id = ingested.run_id(label)
    got = dict(
        ingested.rows(
            "SELECT launch_api, count(*) FROM gpu_events WHERE run_id=? AND kind='kernel' "
            "GROUP BY ALL",
            run_id,
        )
    )
    (raw,) = ingested.raw[label]
    assert got["cudaGraphLaunch"] == raw.kernel_launch_api["cudaGraphLaunch"]
    assert got["cudaGraphLaunch"] > 0.9 * raw.kernels  # replayed graphs: the point of the trace
    assert None not in got


@pytest.mark.parametrize("label", LABELS)
def test_steps_match_profiler_steps(ingested: Ingested, label: str) -> None:
    got = ingested.of_run("SELECT run_id, rank, step FROM steps ORDER BY ALL", label)
    expected = sorted((r.rank, s) for r in ingested.raw[label] for s in r.steps)
    assert got == expected


@pytest.mark.parametrize("label", LABELS)
@pytest.mark.parametrize("table", ["cpu_ops", "runtime_calls"])
def test_rows_take_the_step_that_holds_their_start(
    ingested: Ingested, label: str, table: str
) -> None:
    """The link gives each row the last step started by its start, if that step has not
    ended by then (counted here with a bisect over the steps' spans)."""
    spans: dict[int, list[tuple[int, int, int]]] = {}
    for rank, step, ts, dur in ingested.of_run(
        "SELECT run_id, rank, step, ts_ns, dur_ns FROM steps ORDER BY ALL", label
    ):
        spans.setdefault(rank, []).append((ts, ts + dur, step))
    for by_start in spans.values():
        by_start.sort()
    starts = {rank: [start for start, _, _ in by_start] for rank, by_start in spans.items()}
    rows = ingested.of_run(f"SELECT run_id, rank, ts_ns, step FROM {table}", label)
    expected: Counter[tuple[int, int | None]] = Counter()
    for rank, ts, _ in rows:
        at = bisect.bisect_right(starts.get(rank, []), ts) - 1
        holds = at >= 0 and ts < spans[rank][at][1]
        expected[rank, spans[rank][at][2] if holds else None] += 1
    assert Counter((rank, step) for rank, _, step in rows) == expected


@pytest.mark.parametrize("label", LABELS)
def test_kernel_timestamps_exact_ns(ingested: Ingested, label: str) -> None:
    got = ingested.of_run(
        "SELECT run_id, rank, min(ts_ns), sum(ts_ns) FROM gpu_events WHERE kind='kernel' "
        "GROUP BY ALL ORDER BY ALL",
        label,
    )
    # the sum proves every kernel start exact, not just the first
    expected = sorted(
        (r.rank, r.kernel_ts_min_ns, r.kernel_ts_sum_ns) for r in ingested.raw[label] if r.kernels
    )
    assert got == expected


def test_ns_resolution_trace_is_not_float_rounded(ingested: Ingested) -> None:
    """The fixture that catches float parsing: its ts values need ~19 significant digits."""
    label = "foreign/hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
    run_id = ingested.run_id(label)
    (raw,) = ingested.raw[label]
    ((lo,),) = ingested.rows(
        "SELECT min(ts_ns) FROM gpu_events WHERE run_id=? AND kind='kernel'", run_id
    )
    assert lo == raw.kernel_ts_min_ns
    # self-check: reading this value through a float would have given a different ns count
    assert round(float(Decimal(raw.kernel_ts_min_ns) / 1000) * 1000) != raw.kernel_ts_min_ns


@pytest.mark.parametrize("label", LABELS)
def test_input_dims_stored_as_json(ingested: Ingested, label: str) -> None:
    raw = ingested.raw[label]
    expected: Counter[str] = Counter()
    for r in raw:
        expected.update(r.input_dims)
    if not expected:
        assert not any(r.record_shapes and r.input_dims for r in raw)
        return
    got: Counter[str] = Counter()
    for text, n in ingested.of_run(
        "SELECT run_id, input_dims, count(*) FROM cpu_ops WHERE input_dims IS NOT NULL "
        "GROUP BY ALL",
        label,
    ):
        got[json.dumps(json.loads(text, parse_float=Decimal), default=str)] += n
    assert got == expected


def test_record_shapes_traces_have_input_dims(ingested: Ingested) -> None:
    """The input_dims test above is not vacuous: shapes-recorded traces carry dims."""
    with_shapes = [lb for lb in LABELS if any(r.record_shapes for r in ingested.raw[lb])]
    assert with_shapes
    for lb in with_shapes:
        assert ingested.of_run(
            "SELECT run_id, count(*) FROM cpu_ops WHERE input_dims IS NOT NULL GROUP BY ALL", lb
        ), lb


# ----------------------------------------------------------------- particular foreign traces


def test_cpu_only_trace(ingested: Ingested) -> None:
    run_id = ingested.run_id("foreign/hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz")
    s = ingested.store.run_summary(run_id)
    assert s["kernel_count"] == 0
    assert s["device_name"] is None
    assert ingested.rows("SELECT count(*) FROM gpu_events WHERE run_id=?", run_id) == [(0,)]
    assert ingested.rows(
        "SELECT rank, rank_source, world_size, backend FROM ranks WHERE run_id=?", run_id
    ) == [(34, "distributedInfo", 300, "gloo")]
    ((n_ops,),) = ingested.rows("SELECT count(*) FROM cpu_ops WHERE run_id=?", run_id)
    assert n_ops == 4
    assert ingested.rows("SELECT step FROM steps WHERE run_id=?", run_id) == [(551,)]


def test_amd_trace(ingested: Ingested) -> None:
    label = "foreign/hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"
    run_id = ingested.run_id(label)
    (raw,) = ingested.raw[label]
    s = ingested.store.run_summary(run_id)
    assert raw.kernels > 0
    assert s["kernel_count"] == raw.kernels
    assert s["device_name"] in raw.device_names


def test_legacy_category_tb_plugin_trace(ingested: Ingested) -> None:
    label = "foreign/tb_plugin/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"
    run_id = ingested.run_id(label)
    (raw,) = ingested.raw[label]
    # the raw counter itself knows the 2021 names
    assert (raw.kernels > 0, raw.memcpy > 0, raw.memset > 0) == (True, True, True)
    got = dict(
        ingested.rows("SELECT kind, count(*) FROM gpu_events WHERE run_id=? GROUP BY kind", run_id)
    )
    assert got == {"kernel": raw.kernels, "memcpy": raw.memcpy, "memset": raw.memset}
    # 'external id' (lower case, 2021) still links kernels to their operators
    ((linked,),) = ingested.rows(
        "SELECT count(op_external_id) FROM gpu_events WHERE run_id=? AND kind='kernel'", run_id
    )
    assert linked == raw.kernels
    ((kinds,),) = ingested.rows(
        "SELECT list(memcpy_kind) FROM gpu_events WHERE run_id=? AND kind='memcpy'", run_id
    )
    assert len(kinds) == raw.memcpy
    assert None not in kinds  # 'Memcpy HtoD (Pageable -> Device)' parsed


def test_two_rank_folder(ingested: Ingested) -> None:
    run_id = ingested.run_id("foreign/hta/trace_filter/")
    assert ingested.rows(
        "SELECT rank, world_size, rank_source FROM ranks WHERE run_id=? ORDER BY rank", run_id
    ) == [(0, 128, "distributedInfo"), (1, 128, "distributedInfo")]
    assert ingested.store.run_summary(run_id)["rank_count"] == 2
    assert ingested.rows(
        "SELECT DISTINCT rank FROM gpu_events WHERE run_id=? ORDER BY rank", run_id
    ) == [(0,), (1,)]


def test_own_ddp_sample_has_two_ranks(ingested: Ingested) -> None:
    run_id = ingested.run_id("samples/ddp_gpt_bf16_2rank/")
    assert ingested.rows(
        "SELECT rank, world_size FROM ranks WHERE run_id=? ORDER BY rank", run_id
    ) == [(0, 2), (1, 2)]
    ((n,),) = ingested.rows("SELECT count(*) FROM collectives WHERE run_id=?", run_id)
    assert n > 0


def test_every_run_ingested_once(ingested: Ingested) -> None:
    assert not ingested.errors, ingested.errors
    got = {r for (r,) in ingested.rows("SELECT run_id FROM runs")}
    assert got == set(ingested.run_ids.values())
    assert len(got) == len(LABELS)
