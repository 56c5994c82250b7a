"""The explorable timeline: per rank its CPU threads (ops, annotations, modules, runtime calls
as nested slices) above its GPU streams, for one window, as the browser component draws it.

What a window holds is chosen by analysis.timeline_budget (at most MAX_SHAPES shapes). Times
travel as µs from the run's origin (float64 keeps ns exact for spans below 2^53 ns = 104
days); texts travel once each, in a table the slices index.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from analysis.kernel_classes import KERNEL_CLASSES, classify
from analysis.load import ExploreWindow
from analysis.nesting import nest, nest_order
from analysis.timeline import NAME_CHARS, SHAPES_CHARS, clip

CPU_KINDS = ("op", "annotation", "module", "python", "runtime")
THREAD = ["rank", "pid", "tid"]


def lane_table(threads: pd.DataFrame, streams: pd.DataFrame) -> pd.DataFrame:
    """Lanes in drawing order: per rank, its CPU threads (first active first), then its GPU
    streams. Columns: lane (0-based), key ('cpu:<rank>:<pid>:<tid>' or 'gpu:<rank>:<stream>'),
    kind ('cpu' or 'gpu'), rank, label."""
    cpu = pd.DataFrame({
        "kind": "cpu", "rank": threads["rank"].astype(int), "order": 0,
        "key": [f"cpu:{r}:{p}:{t}" for r, p, t in zip(
            threads["rank"], threads["pid"], threads["tid"], strict=True)],
        "label": [f"rank {r} · thread {t}" for r, t in zip(
            threads["rank"], threads["tid"], strict=True)],
        "first": np.arange(len(threads)),
    })  # fmt: skip
    gpu = pd.DataFrame({
        "kind": "gpu", "rank": streams["rank"].astype(int), "order": 1,
        "key": [f"gpu:{r}:{s}" for r, s in zip(streams["rank"], streams["stream"], strict=True)],
        "label": [f"rank {r} · stream {s}" for r, s in zip(
            streams["rank"], streams["stream"], strict=True)],
        "first": streams["stream"].to_numpy(),
    })  # fmt: skip
    out = pd.concat([cpu, gpu], ignore_index=True)
    out = out.sort_values(["rank", "order", "first"], kind="stable", ignore_index=True)
    out["lane"] = np.arange(len(out))
    return out[["lane", "key", "kind", "rank", "label"]]


class _Strings:
    """One table of the payload's texts: each distinct text sent once, referred to by index.
    Texts are clipped per distinct value, not per row (a window repeats a few hundred names
    over 20 000 slices)."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def codes(self, texts: pd.Series, chars: int = NAME_CHARS) -> list[int]:
        codes, uniques = pd.factorize(texts, use_na_sentinel=True)
        clipped = clip(pd.Series(np.asarray(uniques, dtype=object), dtype=object), chars)
        mine = [self.index.setdefault(str(u), len(self.index)) for u in clipped]
        mine.append(self.index.setdefault("—", len(self.index)))  # code -1: no text
        out: list[int] = np.asarray(mine, dtype=np.int64)[codes].tolist()
        return out

    def table(self) -> list[str]:
        return list(self.index)


def _us(ns: pd.Series | np.ndarray, origin_ns: int) -> list[float]:
    us: list[float] = np.round((np.asarray(ns, dtype=np.int64) - origin_ns) / 1e3, 3).tolist()
    return us


def _lane_of(lanes: pd.DataFrame, keys: list[str]) -> list[int]:
    at = dict(zip(lanes["key"], lanes["lane"], strict=True))
    return [int(at.get(k, -1)) for k in keys]


def cpu_slices(
    cpu: pd.DataFrame, lanes: pd.DataFrame, origin_ns: int, s: _Strings
) -> dict[str, list[Any]]:
    """The window's CPU slices as columns: lane, ts and dur (µs), depth (nesting on its
    thread), name, kind (index in CPU_KINDS), link (External id or correlation, -1)."""
    if cpu.empty:
        return {k: [] for k in ("lane", "ts", "dur", "depth", "name", "kind", "link")}
    c = cpu.iloc[nest_order(cpu, THREAD)].reset_index(drop=True)
    depth = nest(c, THREAD)["depth"]
    keys = [f"cpu:{r}:{p}:{t}" for r, p, t in zip(c["rank"], c["pid"], c["tid"], strict=True)]
    kind = pd.Categorical(c["kind"].astype(str), categories=CPU_KINDS).codes
    return {
        "lane": _lane_of(lanes, keys), "ts": _us(c["ts_ns"], origin_ns),
        "dur": np.round(c["dur_ns"].to_numpy(np.int64) / 1e3, 3).tolist(),
        "depth": depth.astype(int).tolist(), "name": s.codes(c["name"]),
        "kind": kind.astype(int).tolist(),
        "link": c["link"].astype("Int64").fillna(-1).astype(np.int64).tolist(),
    }  # fmt: skip


def gpu_slices(
    gpu: pd.DataFrame, lanes: pd.DataFrame, origin_ns: int, s: _Strings
) -> dict[str, list[Any]]:
    """The window's GPU activities as columns: lane, ts, dur (µs), name, cls (index in
    KERNEL_CLASSES), link (correlation), info (op, shapes, launch configuration)."""
    if gpu.empty:
        return {k: [] for k in ("lane", "ts", "dur", "name", "cls", "link", "info")}
    keys = [f"gpu:{r}:{st}" for r, st in zip(gpu["rank"], gpu["stream"], strict=True)]
    cls = pd.Categorical(classify(gpu["name"])["kernel_class"], categories=KERNEL_CLASSES)
    # One info text per distinct launch (op, shapes, grid, block, occupancy), not per row.
    launch = gpu[["op_name", "input_dims", "grid", "block"]].astype(object)
    launch["occ"] = gpu["est_occupancy_pct"].astype("Float64").round(0)
    group = launch.groupby(list(launch.columns), dropna=False, sort=False).ngroup().to_numpy()
    first = launch.iloc[np.unique(group, return_index=True)[1]]
    occ = first["occ"].astype("Int64").astype(str).where(first["occ"].notna(), "—")
    texts = (
        "op " + clip(first["op_name"], NAME_CHARS)
        + " · shapes " + clip(first["input_dims"], SHAPES_CHARS)
        + " · grid " + clip(first["grid"], 20) + " · block " + clip(first["block"], 20)
        + " · occupancy " + occ + " %"
    ).tolist()  # fmt: skip
    info = [s.index.setdefault(t, len(s.index)) for t in texts]
    return {
        "lane": _lane_of(lanes, keys), "ts": _us(gpu["ts_ns"], origin_ns),
        "dur": np.round(gpu["dur_ns"].to_numpy(np.int64) / 1e3, 3).tolist(),
        "name": s.codes(gpu["name"]), "cls": cls.codes.astype(int).tolist(),
        "link": gpu["correlation"].astype("Int64").fillna(-1).astype(np.int64).tolist(),
        "info": np.asarray(info, dtype=np.int64)[group].tolist(),
    }  # fmt: skip


def grid_cells(
    buckets: pd.DataFrame, lanes: pd.DataFrame, t0_ns: int, bucket_ns: int, origin_ns: int,
    s: _Strings,
) -> dict[str, Any]:  # fmt: skip
    """Busy fraction per GPU lane and bucket (data.reads_timeline.buckets), busy cells only:
    lane, ts (µs), busy (0–1), top (the kernel with the most time), and the bucket's width."""
    keys = [f"gpu:{r}:{st}" for r, st in zip(buckets["rank"], buckets["stream"], strict=True)]
    start = t0_ns + buckets["bucket"].to_numpy(np.int64) * bucket_ns
    busy = np.minimum(buckets["busy_ns"].to_numpy(np.float64) / bucket_ns, 1.0)
    return {
        "lane": _lane_of(lanes, keys), "ts": _us(start, origin_ns),
        "busy": np.round(busy, 3).tolist(), "top": s.codes(buckets["top_name"]),
        "width": bucket_ns / 1e3,
    }  # fmt: skip


def step_lines(marks: pd.DataFrame, origin_ns: int) -> list[dict[str, Any]]:
    """Each ProfilerStep's start per rank (data.reads_timeline.step_marks): rank, ts (µs),
    label ('step 3')."""
    # A step can be both a cpu_op and a user annotation (Kineto versions differ): once.
    first = marks.groupby(["rank", "name"])["ts_ns"].min().reset_index().sort_values("ts_ns")
    return [
        {
            "rank": int(r),
            "ts": round((int(t) - origin_ns) / 1e3, 3),
            "label": f"step {str(n).split('#')[-1]}",
        }
        for r, t, n in zip(first["rank"], first["ts_ns"], first["name"], strict=True)
    ]


def links(
    linked: pd.DataFrame, lanes: pd.DataFrame, cpu: dict[str, list[Any]], origin_ns: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Boxes around what a selection links (data.reads_threads.kernel_links rows, or an op's
    kernels with lane 'gpu'), and arrows from each launch call to its kernel. A CPU box takes
    the depth of the loaded slice it matches (0 when the window does not hold it)."""
    boxes: list[dict[str, Any]] = []
    depth_at = {
        (lane, ts): d for lane, ts, d in zip(cpu["lane"], cpu["ts"], cpu["depth"], strict=True)
    }
    launch, kernels = None, []
    for r in linked.to_dict("records"):
        if r["lane"] == "cpu":
            key = f"cpu:{r['rank']}:{r['pid']}:{r['tid']}"
        else:
            key = f"gpu:{r['rank']}:{r['tid']}"
        lane = _lane_of(lanes, [key])[0]
        ts = round((int(r["ts_ns"]) - origin_ns) / 1e3, 3)
        box = {"lane": lane, "ts": ts, "dur": round(int(r["dur_ns"]) / 1e3, 3),
               "depth": int(depth_at.get((lane, ts), 0))}  # fmt: skip
        boxes.append(box)
        if r.get("role", "kernel") == "launch":
            launch = box
        elif r["lane"] == "gpu":
            kernels.append(box)
    flows = [
        {"from_lane": launch["lane"], "from_ts": launch["ts"], "from_depth": launch["depth"],
         "to_lane": k["lane"], "to_ts": k["ts"]}
        for k in kernels
    ] if launch is not None else []  # fmt: skip
    return boxes, flows


def payload(
    w: ExploreWindow, lanes: pd.DataFrame, origin_ns: int, end_ns: int, marks: pd.DataFrame,
    *, answers: int, view_id: int, search: str = "", highlight: tuple[str, ...] = (),
    linked: pd.DataFrame | None = None, selected: dict[str, Any] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """What the component draws for window `w`: lanes, slices, grid, step lines, highlights
    (kernel names, e.g. a recommendation's; boxes and arrows of the selection), the search
    text, and the status line. `answers` is the component's request this answers (its seq),
    `view_id` changes when Python moves the view (a link, a search hit)."""
    s = _Strings()
    cpu = cpu_slices(w.cpu, lanes, origin_ns, s)
    gpu = gpu_slices(w.gpu, lanes, origin_ns, s)
    grid = (
        grid_cells(w.grid, lanes, w.t0_ns, w.bucket_ns, origin_ns, s)
        if w.grid is not None
        else None
    )
    boxes, flows = links(linked, lanes, cpu, origin_ns) if linked is not None else ([], [])
    drawn = len(cpu["lane"]) + len(gpu["lane"]) + (len(grid["lane"]) if grid else 0)
    if w.budget.exact:
        status = (f"{w.gpu_count:,} GPU activities and {w.cpu_count:,} CPU slices in the "
                  "window, each drawn")  # fmt: skip
    else:
        behind = (
            f", the GPU's busy fraction per {w.bucket_ns / 1e3:,.1f} µs behind them"
            if grid is not None
            else ""
        )
        status = (
            f"{w.gpu_count:,} GPU activities and {w.cpu_count:,} CPU slices in the window: "
            f"the longest {len(gpu['lane']):,} and {len(cpu['lane']):,} drawn{behind} "
            f"({drawn:,} shapes); zoom in for the rest"
        )
    return {
        "window": [round((w.t0_ns - origin_ns) / 1e3, 3), round((w.t1_ns - origin_ns) / 1e3, 3)],
        "span": [0.0, round((end_ns - origin_ns) / 1e3, 3)],
        "answers": answers, "view_id": view_id,
        "lanes": [{"key": k, "kind": kd, "rank": int(r), "label": lb} for k, kd, r, lb in zip(
            lanes["key"], lanes["kind"], lanes["rank"], lanes["label"], strict=True)],
        "classes": list(KERNEL_CLASSES), "cpu_kinds": list(CPU_KINDS),
        "cpu": cpu, "gpu": gpu, "grid": grid, "steps": step_lines(marks, origin_ns),
        # clipped as the slices' names are, so that the browser matches them
        "highlight": {"names": clip(pd.Series(highlight, dtype=object), NAME_CHARS).tolist(),
                      "boxes": boxes, "flows": flows},
        "search": search, "selected": selected, "status": status, "shapes": drawn,
        "names": s.table(),
    }  # fmt: skip
