"""Reads of what the host did in each step: the profiler's event counts (its overhead grows
with them), the time the host spent blocked waiting for the GPU, the spans of the forward
and backward passes, and the intervals of the host regions that leave the GPU idle
(analysis.host_regions, analysis.step_model).

The main thread of a rank is the one that writes its ProfilerStep ranges (else the one with
the most ops outside the autograd engine); backward ops run on the autograd engine's threads
(`autograd::engine::evaluate_function: …`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from data.store import Store

# A launch or copy call this long waited for something (a full launch queue, a blocking
# copy): the host was not working meanwhile. A kernel launch takes 3-10 µs.
BLOCKED_CALL_NS = 50_000
# A blocking copy this small is a value read back (`.item()`, `.cpu()` of a scalar): a sync.
SCALAR_COPY_BYTES = 16_384
_BACKWARD = "autograd::engine::evaluate_function:%"

_MAIN_THREAD = f"""
main AS (
    SELECT rank, coalesce(
        (SELECT arg_max(a.tid, a.dur_ns) FROM annotations a
          WHERE a.run_id = $run AND a.rank = o.rank AND a.kind = 'cpu'
            AND a.name LIKE 'ProfilerStep#%'),
        arg_max(tid, n)) AS tid
    FROM (SELECT rank, tid, count(*) AS n FROM cpu_ops
          WHERE run_id = $run AND name NOT LIKE '{_BACKWARD}' GROUP BY rank, tid) o
    GROUP BY rank
)"""


# The host time of each checkpoint's entry in the forward pass, per rank and step: the main
# thread's time from the end of the top-level op before the checkpoint marker to the start of
# the one after it, less the marker's own children (a reentrant CheckpointFunction holds the
# block's forward ops). The non-reentrant kind makes one empty tensor just before its marker,
# so an `aten::empty` there is part of the entry. Columns: rank, step, entry_ns, entry_ops.
_CHECKPOINT_ENTRIES = f"""
    WITH {_MAIN_THREAD.strip()},
    t AS (
        SELECT o.rank, o.step, o.name, o.ts_ns, o.ts_ns + o.dur_ns AS end_ns,
               o.ts_ns >= coalesce(max(o.ts_ns + o.dur_ns) OVER (
                   PARTITION BY o.rank ORDER BY o.ts_ns, o.dur_ns DESC
                   ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), -1) AS outermost
        FROM cpu_ops o JOIN main m ON o.rank = m.rank AND o.tid = m.tid
        WHERE o.run_id = $run AND o.step IS NOT NULL),
    framed AS (
        SELECT *, lead(ts_ns) OVER (PARTITION BY rank ORDER BY ts_ns) AS next_ns,
               max(CASE WHEN name != 'aten::empty' THEN end_ns END) OVER (
                   PARTITION BY rank ORDER BY ts_ns
                   ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_ns
        FROM t WHERE outermost AND name NOT LIKE 'ProfilerStep#%'),
    marks AS (SELECT * FROM framed WHERE name IN ('_NoopSaveInputs', 'CheckpointFunction')
              AND next_ns IS NOT NULL AND prev_ns IS NOT NULL),
    inside AS (
        SELECT k.rank, k.ts_ns AS k_ts, c.ts_ns, c.end_ns FROM marks k
        JOIN t c ON c.rank = k.rank AND c.ts_ns >= k.ts_ns AND c.end_ns <= k.end_ns
         AND NOT c.outermost),
    children AS (
        SELECT rank, k_ts, sum(end_ns - ts_ns) AS child_ns, count(*) AS n FROM (
            SELECT *, ts_ns >= coalesce(max(end_ns) OVER (
                PARTITION BY rank, k_ts ORDER BY ts_ns, end_ns DESC
                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), -1) AS direct
            FROM inside) WHERE direct GROUP BY ALL)
    SELECT k.rank, k.step, sum(k.next_ns - k.prev_ns - coalesce(c.child_ns, 0)) AS entry_ns,
           count(*) AS entry_ops
    FROM marks k LEFT JOIN children c ON c.rank = k.rank AND c.k_ts = k.ts_ns
    GROUP BY ALL"""


def step_host(store: Store, run_id: str) -> pd.DataFrame:
    """Per rank and step: cpu_ops, runtime_calls, memory_events (the events the profiler
    recorded in the step), empty_ns (the median recorded duration of its aten::empty calls, a
    measure of the host's speed under the profiler; NULL without any), syncs (…Synchronize
    calls) and the time the host spent waiting in runtime calls: sync_ns (…Synchronize),
    copy_wait_ns (memcpy/memset calls of BLOCKED_CALL_NS or more: pageable copies block the
    host), scalar_wait_ns (such copies of under SCALAR_COPY_BYTES: a value read back, waiting
    for the GPU), alloc_ns (cudaMalloc/cudaFree: the caching allocator giving memory back;
    cudaFree synchronizes the device) and queue_ns (launch calls of BLOCKED_CALL_NS or more: a
    full launch queue, the host running ahead)."""
    return store.query(
        f"""
        WITH s AS (SELECT rank, step, ts_ns, ts_ns + dur_ns AS end_ns FROM steps
                   WHERE run_id = $run),
        ops AS (SELECT rank, step, count(*) AS cpu_ops,
                       median(dur_ns) FILTER (WHERE name = 'aten::empty') AS empty_ns
                FROM cpu_ops WHERE run_id = $run AND step IS NOT NULL GROUP BY ALL),
        copied AS (SELECT rank, correlation, bytes FROM gpu_events
                   WHERE run_id = $run AND kind = 'memcpy'),
        calls AS (
            SELECT c.rank, c.step, count(*) AS runtime_calls,
                   count(*) FILTER (WHERE name LIKE '%Synchronize%') AS syncs,
                   coalesce(sum(dur_ns) FILTER (WHERE name LIKE '%Synchronize%'), 0)
                       AS sync_ns,
                   coalesce(sum(dur_ns) FILTER (
                       WHERE call_kind IN ('memcpy', 'memset') AND dur_ns >= {BLOCKED_CALL_NS}
                         AND coalesce(k.bytes, {SCALAR_COPY_BYTES}) >= {SCALAR_COPY_BYTES}), 0)
                       AS copy_wait_ns,
                   coalesce(sum(dur_ns) FILTER (
                       WHERE call_kind = 'memcpy' AND dur_ns >= {BLOCKED_CALL_NS}
                         AND k.bytes < {SCALAR_COPY_BYTES}), 0) AS scalar_wait_ns,
                   coalesce(sum(dur_ns) FILTER (
                       WHERE regexp_matches(name, '^(cuda|hip)(Malloc|Free)(Async)?$')), 0)
                       AS alloc_ns,
                   coalesce(sum(dur_ns) FILTER (WHERE call_kind IN ('launch', 'graph_launch')
                                                 AND dur_ns >= {BLOCKED_CALL_NS}), 0)
                       AS queue_ns
            FROM runtime_calls c LEFT JOIN copied k USING (rank, correlation)
            WHERE c.run_id = $run AND c.step IS NOT NULL GROUP BY ALL),
        mem AS (SELECT s.rank, s.step, count(*) AS memory_events FROM s
                JOIN memory_events m ON m.run_id = $run AND m.rank = s.rank
                 AND m.ts_ns >= s.ts_ns AND m.ts_ns < s.end_ns
                GROUP BY ALL)
        SELECT s.rank, s.step, coalesce(ops.cpu_ops, 0) AS cpu_ops, ops.empty_ns,
               coalesce(calls.runtime_calls, 0) AS runtime_calls,
               coalesce(calls.syncs, 0) AS syncs,
               coalesce(mem.memory_events, 0) AS memory_events,
               coalesce(calls.sync_ns, 0) AS sync_ns,
               coalesce(calls.copy_wait_ns, 0) AS copy_wait_ns,
               coalesce(calls.scalar_wait_ns, 0) AS scalar_wait_ns,
               coalesce(calls.alloc_ns, 0) AS alloc_ns,
               coalesce(calls.queue_ns, 0) AS queue_ns
        FROM s LEFT JOIN ops USING (rank, step) LEFT JOIN calls USING (rank, step)
        LEFT JOIN mem USING (rank, step)
        ORDER BY s.rank, s.step
        """,
        {"run": run_id},
    )


def pass_spans(store: Store, run_id: str) -> pd.DataFrame:
    """Per rank and step: fwd_start_ns (the main thread's first op that is not a named
    range), bwd_start_ns and bwd_end_ns (the autograd engine's first and last op; NULL
    without a backward pass)."""
    return store.query(
        f"""
        WITH {_MAIN_THREAD}
        SELECT o.rank, o.step,
               min(o.ts_ns) FILTER (WHERE o.tid = m.tid AND o.name NOT LIKE '%#%'
                                    AND o.name NOT LIKE '{_BACKWARD}') AS fwd_start_ns,
               min(o.ts_ns) FILTER (WHERE o.name LIKE '{_BACKWARD}') AS bwd_start_ns,
               max(o.ts_ns + o.dur_ns) FILTER (WHERE o.name LIKE '{_BACKWARD}')
                   AS bwd_end_ns
        FROM cpu_ops o JOIN main m USING (rank)
        WHERE o.run_id = $run AND o.step IS NOT NULL
        GROUP BY o.rank, o.step ORDER BY o.rank, o.step
        """,
        {"run": run_id},
    )


def region_intervals(store: Store, run_id: str) -> pd.DataFrame:
    """Host intervals that explain GPU idle time: rank, region (allocator, sync,
    data_loading, optimizer), name, ts_ns, dur_ns, cpu_ops (the ops the profiler recorded
    inside it: its overhead there). Allocator: cudaMalloc/cudaFree (hip…) calls; sync:
    …Synchronize calls; data loading: DataLoader ranges; optimizer: the Optimizer.step and
    zero_grad ranges."""
    return store.query(
        """
        WITH r AS (
            SELECT rank, 'allocator' AS region, name, ts_ns, dur_ns FROM runtime_calls
            WHERE run_id = $run AND regexp_matches(name, '^(cuda|hip)(Malloc|Free)(Async)?$')
            UNION ALL
            SELECT rank, 'sync', name, ts_ns, dur_ns FROM runtime_calls
            WHERE run_id = $run AND name LIKE '%Synchronize%'
            UNION ALL
            SELECT rank, CASE WHEN name LIKE '%DataLoader%' THEN 'data_loading'
                              ELSE 'optimizer' END, name, ts_ns, dur_ns
            FROM (SELECT rank, name, ts_ns, dur_ns FROM annotations
                  WHERE run_id = $run AND kind = 'cpu'
                  UNION ALL
                  SELECT rank, name, ts_ns, dur_ns FROM cpu_ops
                  WHERE run_id = $run AND name LIKE '%#%')
            WHERE name LIKE '%DataLoader%' OR name LIKE 'Optimizer.step#%'
               OR name LIKE 'Optimizer.zero_grad#%'
        ),
        counted AS (
            SELECT r.rank, r.ts_ns, r.dur_ns, count(o.ts_ns) AS cpu_ops
            FROM r LEFT JOIN cpu_ops o ON o.run_id = $run AND o.rank = r.rank
             AND o.ts_ns >= r.ts_ns AND o.ts_ns < r.ts_ns + r.dur_ns
             AND r.region IN ('data_loading', 'optimizer')
            GROUP BY r.rank, r.ts_ns, r.dur_ns
        )
        SELECT r.rank, r.region, r.name, r.ts_ns, r.dur_ns, c.cpu_ops
        FROM r JOIN counted c USING (rank, ts_ns, dur_ns)
        ORDER BY r.rank, r.ts_ns
        """,
        {"run": run_id},
    )


def recomputed_forward(store: Store, run_id: str) -> pd.DataFrame:
    """Per rank and step with recomputation: ops (the outermost forward ops run inside the
    backward pass), host_ns (the host time checkpointing costs: see below), cpu_ops (the
    events recorded inside that time), gpu_ns (the GPU time of the kernels the recomputed
    ops launched).

    A forward op records the autograd node it creates (its sequence number); the ops that
    compute gradients run with autograd off, so inside the backward pass only a recomputed
    forward (activation checkpointing) has numbered ops besides the engine's own
    (`evaluate_function: …` and `…Backward…` ops). Of the 339 validation runs, the 37 with
    checkpointing have them, and timm GhostNet's (16 a step, 0 ns of checkpoint time around
    them: the rule asks for that too). Only the threads that run the backward pass are looked at
    (both checkpoint kinds recompute there): another thread's forward ops can fall inside a
    step's backward window (the synthetic benchmark run's replicas: 19 209 of them).

    host_ns is what checkpointing adds to the host's step, not only the recomputed ops: in
    the backward pass, the time of each node that holds a recomputation (`…Backward0` when a
    saved tensor is unpacked, `CheckpointFunctionBackward` for the reentrant kind) less its
    own gradient work (its children outside the recomputation), i.e. the recomputed ops and
    the checkpoint's Python around them (frames, RNG state); in the forward pass, the host
    time around each checkpoint's entry on the main thread (`_NoopSaveInputs` or
    `CheckpointFunction`, less that op's own children). On the validation ViT the recomputed
    ops alone were 8.2 ms of a 12.8 ms region per step (D65)."""
    forward = store.query(
        f"""
        WITH b AS (
            SELECT rank, step, tid, min(ts_ns) AS t0, max(ts_ns + dur_ns) AS t1 FROM cpu_ops
            WHERE run_id = $run AND step IS NOT NULL AND name LIKE '{_BACKWARD}'
            GROUP BY ALL)
        SELECT o.rank, o.step, o.tid, o.ts_ns, o.ts_ns + o.dur_ns AS end_ns
        FROM cpu_ops o JOIN b ON o.rank = b.rank AND o.step = b.step AND o.tid = b.tid
         AND o.ts_ns >= b.t0 AND o.ts_ns < b.t1
        WHERE o.run_id = $run AND o.sequence_number IS NOT NULL
          AND o.name NOT LIKE '{_BACKWARD}' AND o.name NOT ILIKE '%backward%'
        ORDER BY o.rank, o.tid, o.ts_ns, end_ns DESC
        """,
        {"run": run_id},
    )
    cols = ["rank", "step", "ops", "host_ns", "cpu_ops", "gpu_ns"]
    if forward.empty:
        return forward.reindex(columns=cols)
    # The outermost ones: not inside an earlier op of the same thread (sorted by start).
    reach = forward.groupby(["rank", "tid"])["end_ns"].transform(
        lambda e: e.cummax().shift(fill_value=-1)
    )
    top = forward[forward["ts_ns"] >= reach]
    # Outermost ops of a thread do not overlap, so an op is inside at most one of them, and
    # the nodes holding a recomputation do not overlap either: each lookup is the last one
    # to start before (an ASOF join, n log n; a range join was n × m: 13 s for 16 k ops).
    return store.query(
        f"""
        WITH top AS (
            SELECT unnest($rank) AS rank, unnest($step) AS step, unnest($tid) AS tid,
                   unnest($ts) AS ts_ns, unnest($end) AS end_ns),
        ops AS (SELECT rank, tid, ts_ns, ts_ns + dur_ns AS end_ns, name, external_id
                FROM cpu_ops WHERE run_id = $run),
        inner_ops AS (
            SELECT t.rank, t.step, o.external_id
            FROM ops o ASOF JOIN (SELECT * FROM top WHERE end_ns > ts_ns) t
              ON o.rank = t.rank AND o.tid = t.tid AND o.ts_ns >= t.ts_ns
            WHERE o.ts_ns < t.end_ns),
        counted AS (SELECT rank, step, count(*) AS cpu_ops FROM inner_ops GROUP BY ALL),
        gpu AS (
            SELECT i.rank, i.step, sum(e.dur_ns) AS gpu_ns FROM inner_ops i
            JOIN gpu_events e ON e.run_id = $run AND e.rank = i.rank
             AND e.op_external_id = i.external_id
            GROUP BY ALL),
        -- the backward node around each recomputation: the last node to start before it
        nodes AS (SELECT * FROM ops WHERE name ILIKE '%backward%'
                  AND name NOT LIKE '{_BACKWARD}'),
        holder AS (
            SELECT DISTINCT t.rank, t.step, t.tid, n.ts_ns, n.end_ns
            FROM top t ASOF JOIN nodes n
              ON t.rank = n.rank AND t.tid = n.tid AND t.ts_ns >= n.ts_ns
            WHERE n.end_ns >= t.end_ns),
        -- the node's own gradient work: its descendants outside every recomputation
        own AS (
            SELECT h.rank, h.step, h.tid, h.ts_ns AS h_ts, o.ts_ns, o.end_ns
            FROM ops o ASOF JOIN holder h
              ON o.rank = h.rank AND o.tid = h.tid AND o.ts_ns >= h.ts_ns
            WHERE o.end_ns <= h.end_ns AND (o.ts_ns, o.end_ns) != (h.ts_ns, h.end_ns)
              AND NOT EXISTS (SELECT 1 FROM inner_ops i
                              WHERE i.rank = o.rank AND i.external_id = o.external_id)),
        own_top AS (
            SELECT rank, step, h_ts, end_ns - ts_ns AS dur_ns, ts_ns >= coalesce(max(end_ns)
                OVER (PARTITION BY rank, tid, h_ts ORDER BY ts_ns, end_ns DESC
                      ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), -1) AS outermost
            FROM own),
        region AS (
            SELECT h.rank, h.step, sum(h.end_ns - h.ts_ns - coalesce(w.own_ns, 0)) AS region_ns
            FROM holder h LEFT JOIN (
                SELECT rank, h_ts, sum(dur_ns) AS own_ns FROM own_top WHERE outermost
                GROUP BY ALL) w ON w.rank = h.rank AND w.h_ts = h.ts_ns
            GROUP BY ALL),
        entry AS ({_CHECKPOINT_ENTRIES}),
        host AS (SELECT rank, step, count(*) AS ops FROM top GROUP BY ALL)
        SELECT h.rank, h.step, h.ops,
               coalesce(r.region_ns, 0) + coalesce(e.entry_ns, 0) AS host_ns,
               c.cpu_ops + coalesce(e.entry_ops, 0) AS cpu_ops, coalesce(g.gpu_ns, 0) AS gpu_ns
        FROM host h JOIN counted c USING (rank, step) LEFT JOIN gpu g USING (rank, step)
        LEFT JOIN region r USING (rank, step) LEFT JOIN entry e USING (rank, step)
        ORDER BY h.rank, h.step
        """,
        {
            "run": run_id,
            **{
                k.removesuffix("_ns"): top[k].astype("int64").tolist()
                for k in ("rank", "step", "tid", "ts_ns", "end_ns")
            },
        },
    )


def trace_metadata(store: Store, run_id: str) -> pd.DataFrame:
    """rank, trace_metadata (the trace's top-level keys, JSON text: profiler flags, and the
    hook's dashboardUnprofiledSteps)."""
    return store.query(
        "SELECT rank, trace_metadata FROM ranks WHERE run_id = ? ORDER BY rank", [run_id]
    )
