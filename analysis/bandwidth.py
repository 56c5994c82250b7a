"""HBM bandwidth utilization estimated from the trace: modelled bytes over kernel time.

Each GPU event moves its modelled bytes (analysis.roofline.kernel_work) at a constant rate
over [ts, ts + dur); the rate of a time bucket is the bytes all events move inside it
divided by its length, so overlapping kernels on several streams add up. This is an estimate
of DRAM traffic (compulsory bytes, plus tiled GEMMs' per-wave re-reads, analysis.
gemm_traffic: L2 hits make real traffic lower, other re-reads higher), the
same quantity NVML GPM's DRAM_BW_UTIL measures in hardware, which the bandwidth page draws
beside it when the run has telemetry.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

SERIES_COLUMNS = ["rank", "ts_ns", "bucket_ns", "bytes", "gbps", "util_pct"]


def bandwidth_series(
    ops_with_kernels: pd.DataFrame, bandwidth_bytes_per_s: float | None, buckets: int = 400
) -> pd.DataFrame:
    """Estimated HBM traffic over time, per rank: SERIES_COLUMNS.

    Args:
        ops_with_kernels: `kernel_work` output (ts_ns, dur_ns, bytes; NaN bytes count 0).
        bandwidth_bytes_per_s: the roof for util_pct (datasheet or measured); None: NaN.
        buckets: buckets over each rank's span (first start to last end), equal width.
    Returns one row per rank and bucket: ts_ns (bucket start, trace clock), bucket_ns,
    bytes (moved inside the bucket), gbps, util_pct (gbps over the roof).
    """
    parts = [
        _rank_series(int(g["rank"].to_numpy()[0]), g, bandwidth_bytes_per_s, buckets)
        for _, g in ops_with_kernels.groupby("rank", sort=True)
        if len(g)
    ]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=SERIES_COLUMNS)


def _rank_series(rank: int, g: pd.DataFrame, bw: float | None, buckets: int) -> pd.DataFrame:
    start = g["ts_ns"].to_numpy(dtype=np.int64)
    dur = np.maximum(g["dur_ns"].to_numpy(dtype=np.int64), 1)
    end = start + dur
    rate = np.nan_to_num(g["bytes"].to_numpy(dtype=float)) / dur  # bytes per ns
    t0, t1 = int(start.min()), int(end.max())
    edges = np.linspace(t0, t1, buckets + 1)
    # Total rate is piecewise constant between event boundaries; its integral is piecewise
    # linear, so bytes moved before any time t is an exact interpolation.
    times = np.concatenate([start, end]).astype(float)
    order = np.argsort(times, kind="stable")
    steps = np.concatenate([rate, -rate])[order]
    t = times[order]
    level = np.cumsum(steps)[:-1]
    moved = np.concatenate([[0.0], np.cumsum(level * np.diff(t))])
    at_edges = np.interp(edges, t, moved)
    per_bucket = np.diff(at_edges)
    width = np.diff(edges)
    gbps = per_bucket / width  # bytes/ns = GB/s
    return pd.DataFrame({
        "rank": rank, "ts_ns": edges[:-1].astype(np.int64), "bucket_ns": width,
        "bytes": per_bucket, "gbps": gbps,
        "util_pct": 100 * gbps * 1e9 / bw if bw else np.nan,
    })  # fmt: skip


KERNEL_COLUMNS = ["name", "kernel_class", "count", "time_ms", "bytes", "gbps", "util_pct"]


def kernel_bandwidth(
    ops_with_kernels: pd.DataFrame, bandwidth_bytes_per_s: float | None, n: int = 50
) -> pd.DataFrame:
    """The n kernels (by name) that move the most bytes: KERNEL_COLUMNS, most bytes first.

    gbps is modelled bytes over the kernels' summed time; util_pct is that over the roof.
    Kernels without a work model are left out (their bytes are unknown).
    """
    df = ops_with_kernels[ops_with_kernels["bytes"].notna()]
    if df.empty:
        return pd.DataFrame(columns=KERNEL_COLUMNS)
    agg = (
        df.groupby("name", observed=True, sort=False)
        .agg(
            kernel_class=("kernel_class", "first"), count=("dur_ns", "size"),
            dur=("dur_ns", "sum"), bytes=("bytes", "sum"),
        )
        .nlargest(n, "bytes")
        .reset_index()
    )  # fmt: skip
    gbps = agg["bytes"] / agg["dur"].where(agg["dur"] > 0)
    return pd.DataFrame({
        "name": agg["name"].astype(str), "kernel_class": agg["kernel_class"],
        "count": agg["count"].astype(int), "time_ms": agg["dur"] / 1e6, "bytes": agg["bytes"],
        "gbps": gbps,
        "util_pct": 100 * gbps * 1e9 / bandwidth_bytes_per_s if bandwidth_bytes_per_s else np.nan,
    })  # fmt: skip


def bandwidth_frames(
    work: pd.DataFrame,
    samples: pd.DataFrame,
    time_bases: pd.DataFrame,
    peak_bytes_per_s: float | None,
    buckets: int,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(estimated series, GPM samples), both with `t_s` from the run's first GPU event, for
    analysis.figures.bandwidth.bandwidth_figure. `samples` are the run's NVML samples
    (analysis.load.RunTelemetry.samples), `time_bases` its ranks' base_time_ns; the samples
    returned are those with DRAM_BW_UTIL that cover the trace, none when the run has no
    Unix time base."""
    series = bandwidth_series(work, peak_bytes_per_s, buckets)
    origin = int(work["ts_ns"].min())
    series["t_s"] = (series["ts_ns"] - origin) / 1e9
    bases = time_bases["base_time_ns"].dropna()
    if samples.empty or not len(bases):
        return series, samples.iloc[0:0]
    gpm = samples[samples["gpm_dram_bw_util_pct"].notna()]
    gpm = gpm.assign(t_s=(gpm["ts_ns"] - (int(bases.iloc[0]) + origin)) / 1e9)
    # The samples that cover the trace: a sample averages the interval before it, so those
    # from its start to the first one after its end (the run's window has a second around).
    end_s = (int((work["ts_ns"] + work["dur_ns"]).max()) - origin) / 1e9
    first_after = gpm.loc[gpm["t_s"] > end_s].groupby("gpu")["t_s"].min()
    limit = gpm["gpu"].map(first_after).fillna(end_s)
    return series, gpm[(gpm["t_s"] >= 0) & (gpm["t_s"] <= limit)]
