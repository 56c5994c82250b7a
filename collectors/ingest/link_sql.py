"""The SQL that links one rank's raw tables (registered as raw_*) into the linked_* tables.

Every join is within a rank, so a run is linked a batch of ranks at a time
(collectors.ingest.rank_write): what the ingest holds does not grow with the rank count."""


def _with_steps(table: str) -> str:
    """linked_{table}: the rows of raw_{table}, each with the last step started by its start if
    that step has not ended by then. The ASOF join sorts its left side with every column it
    carries, so it runs on the distinct starts alone and each row takes its start's step in a
    hash join (cpu_ops' JSON text is not sorted)."""
    return f"""
CREATE VIEW {table}_steps AS
WITH starts AS (SELECT DISTINCT rank, ts_ns FROM raw_{table})
SELECT t.rank, t.ts_ns, CASE WHEN t.ts_ns < s.ts_ns + s.dur_ns THEN s.step END AS step
FROM starts t ASOF LEFT JOIN step_marks s ON t.rank = s.rank AND t.ts_ns >= s.ts_ns;

CREATE VIEW linked_{table} AS
SELECT c.*, t.step FROM raw_{table} c LEFT JOIN {table}_steps t USING (rank, ts_ns);
"""


# Links and derived columns, over the raw_* tables rank_write registers: first the steps, then
# (on a second connection, beside the cpu_ops write) the GPU activity.
STEPS_SQL = f"""
CREATE TABLE step_marks AS
WITH marks AS (
    SELECT rank, name, ts_ns, dur_ns FROM raw_annotations
    WHERE kind = 'cpu' AND name LIKE 'ProfilerStep#%'
    UNION ALL
    SELECT rank, name, ts_ns, dur_ns FROM raw_cpu_ops WHERE name LIKE 'ProfilerStep#%'
)
SELECT rank, TRY_CAST(split_part(name, '#', 2) AS INTEGER) AS step,
       min(ts_ns) AS ts_ns, max(ts_ns + dur_ns) - min(ts_ns) AS dur_ns
FROM marks GROUP BY ALL HAVING step IS NOT NULL;
{_with_steps("runtime_calls")}{_with_steps("cpu_ops")}
CREATE VIEW linked_annotations AS SELECT * FROM raw_annotations;
CREATE VIEW linked_collectives AS SELECT * FROM raw_collectives;
CREATE VIEW linked_memory_events AS SELECT * FROM raw_memory_events;
CREATE VIEW linked_python_functions AS SELECT * FROM raw_python_functions;

"""

AFTER_GPU_LINK = ("gpu_events", "runtime_calls", "steps")  # on its connection
GPU_LINK_SQL = """
-- The launches are a table and the GPU rows a view over them: step_gpu reads a few of its
-- columns and the write streams the rest, where a table of the joined rows copied them all.
CREATE TABLE launches AS
SELECT rank, correlation, arg_min(name, ts_ns) AS launch_api, min(ts_ns) AS launch_ts_ns,
       arg_min(external_id, ts_ns) AS launch_external_id, arg_min(step, ts_ns) AS step
FROM linked_runtime_calls
WHERE category <> 'sync' AND correlation IS NOT NULL
GROUP BY rank, correlation;

CREATE VIEW linked_gpu_events AS
SELECT g.*, coalesce(g.external_id, l.launch_external_id) AS op_external_id,
       l.launch_api, l.launch_ts_ns, l.step
FROM raw_gpu_events g LEFT JOIN launches l ON g.rank = l.rank AND g.correlation = l.correlation;

CREATE TABLE step_gpu AS
WITH iv AS (
    SELECT rank, step, kind, ts_ns AS s, ts_ns + dur_ns AS e, dur_ns,
           max(ts_ns + dur_ns) OVER (PARTITION BY rank, step ORDER BY ts_ns, dur_ns
               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
    FROM linked_gpu_events WHERE step IS NOT NULL
), isl AS (
    SELECT *, sum(CASE WHEN prev_end IS NULL OR s > prev_end THEN 1 ELSE 0 END)
        OVER (PARTITION BY rank, step ORDER BY s, dur_ns ROWS UNBOUNDED PRECEDING) AS island
    FROM iv
), merged AS (
    SELECT rank, step, island, min(s) AS s, max(e) AS e FROM isl GROUP BY ALL
)
SELECT i.rank, i.step, min(i.s) AS gpu_start_ns, max(i.e) AS gpu_end_ns,
       count(*) FILTER (WHERE i.kind = 'kernel') AS kernel_count,
       coalesce(sum(i.dur_ns) FILTER (WHERE i.kind = 'kernel'), 0) AS kernel_time_ns,
       (SELECT sum(m.e - m.s) FROM merged m WHERE m.rank = i.rank AND m.step = i.step)
           AS gpu_busy_ns
FROM isl i GROUP BY i.rank, i.step;

CREATE VIEW linked_steps AS
SELECT s.*, g.gpu_start_ns, g.gpu_end_ns, coalesce(g.kernel_count, 0) AS kernel_count,
       coalesce(g.kernel_time_ns, 0) AS kernel_time_ns, coalesce(g.gpu_busy_ns, 0) AS gpu_busy_ns
FROM step_marks s LEFT JOIN step_gpu g USING (rank, step);
"""

# What the run's own rows need of each linked rank: its time span, kernels and the devices
# its GPU activity ran on.
SUMMARY_SQL = """
WITH spans AS (
    SELECT rank, ts_ns, ts_ns + dur_ns AS e FROM raw_gpu_events
    UNION ALL SELECT rank, ts_ns, ts_ns + dur_ns FROM raw_runtime_calls
    UNION ALL SELECT rank, ts_ns, ts_ns + dur_ns FROM raw_cpu_ops
    UNION ALL SELECT rank, ts_ns, ts_ns + dur_ns FROM raw_annotations
), gpu AS (
    SELECT rank, count(*) FILTER (WHERE kind = 'kernel') AS kernels,
           list(DISTINCT device) FILTER (WHERE device IS NOT NULL) AS devices
    FROM raw_gpu_events GROUP BY rank
)
SELECT rank, min(ts_ns), max(e), any_value(gpu.kernels), any_value(gpu.devices)
FROM spans LEFT JOIN gpu USING (rank) GROUP BY rank
"""
