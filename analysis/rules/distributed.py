"""Rules for multi-GPU runs: exposed communication, the straggler rank, slow collectives.

A collective kernel on one rank lasts from the moment that rank enters it until every peer
has too: its duration is transfer plus waiting for the last peer. With several ranks in the
trace the two are told apart (the last rank to arrive waits least), so exposed communication
that is really waiting goes to `straggler`, not to `comm-overlap` or `nccl-topology`.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from analysis import breakdown as bd
from analysis.facts import Facts
from analysis.intervals import covered_before, islands
from analysis.model.dtypes import COLLECTIVE_DTYPE_BYTES
from analysis.ranks import rank_positions
from analysis.rules.catalog import CATALOG
from analysis.rules.measures import names_matching
from analysis.rules.registry import Finding, Rule, rule
from analysis.text import ms


def _step_key(per_step: pd.DataFrame) -> pd.Series:
    return per_step["step"].astype("Int64").fillna(-1)


_P2P = re.compile(r"sendrecv|(?:^|_)(?:send|recv)(?:_|\(|$)", re.IGNORECASE)


def _exposed_collectives(facts: Facts) -> pd.DataFrame:
    """Per breakdown row (same index): exposed_ns, the time collective kernels (not
    point-to-point send/recv: pipeline stages waiting for each other) run while no compute
    runs, last_ns, the exposed time of the window's last collective, and blocking_ns, the
    exposed time of collectives something waited for: the next compute kernel was already
    queued when the collective ended, or the host sat in a synchronize call. An exposed
    collective that nothing waited for ran while the GPU idled for its host anyway."""
    ev = facts.events
    cls = bd.event_classes(ev["kind"], ev["name"])
    p2p = names_matching(ev["name"], _P2P).to_numpy()
    ps = facts.per_step
    syncs = facts.syncs
    out = {c: np.zeros(len(ps), dtype=np.int64) for c in ("exposed_ns", "last_ns", "blocking_ns")}
    # Numpy on each rank's rows found once: a mask over every event per rank cost ranks ×
    # events, a pandas frame per rank ~30 ms (128 ranks: 4 s).
    events_at, syncs_at = rank_positions(ev), rank_positions(syncs)
    ts, dur = ev["ts_ns"].to_numpy(np.int64), ev["dur_ns"].to_numpy(np.int64)
    launch_all = ev["launch_ts_ns"].to_numpy(dtype=float, na_value=np.inf)
    sync_t0 = syncs["ts_ns"].to_numpy(np.int64)
    sync_t1 = sync_t0 + syncs["dur_ns"].to_numpy(np.int64)
    ends_all = ps["end_ns"].to_numpy(np.int64)
    for rank, w in rank_positions(ps).items():
        at = events_at.get(rank, np.empty(0, dtype=np.int64))
        comp = at[cls[at] == bd.COMPUTE]
        cs, ce, first = islands(ts[comp], dur[comp])
        comm = at[(cls[at] == bd.COMM) & ~p2p[at]]
        s, e, _ = islands(ts[comm], dur[comm])
        if not len(s):
            continue
        exposed = (e - s) - (covered_before(cs, ce, e) - covered_before(cs, ce, s))
        nxt = np.searchsorted(cs, e, side="left")
        launch = launch_all[comp][first]
        queued = (nxt < len(cs)) & (launch[np.minimum(nxt, max(len(cs) - 1, 0))] < e)
        mine = syncs_at.get(rank, np.empty(0, dtype=np.int64))
        t0, t1 = sync_t0[mine], sync_t1[mine]
        held = ((t0[None, :] < e[:, None]) & (t1[None, :] >= e[:, None])).any(axis=1)
        waited = np.where(queued | held, exposed, 0)
        ends = ends_all[w]
        win = np.minimum(np.searchsorted(ends, e, side="left"), len(w) - 1)
        tot = np.bincount(win, weights=exposed, minlength=len(w))
        out["blocking_ns"][w] = np.bincount(win, weights=waited, minlength=len(w))
        # Islands are sorted by time, so `win` is non-decreasing: a window's last island is
        # the one before the first island of the next window.
        pos = np.searchsorted(win, np.arange(len(w)), side="right") - 1
        has = (pos >= 0) & (win[np.maximum(pos, 0)] == np.arange(len(w)))
        out["exposed_ns"][w] = tot
        out["last_ns"][w] = np.where(has, exposed[np.maximum(pos, 0)], 0)
    return pd.DataFrame(out, index=ps.index)[["exposed_ns", "last_ns", "blocking_ns"]]


def _largest_message_bytes(facts: Facts) -> float:
    """The largest collective message in the run, in bytes (0 when none is recorded)."""
    c = facts.collectives
    c = c[c["source"] == "kernel"]
    size = c["dtype"].map(COLLECTIVE_DTYPE_BYTES).astype(float)
    nelems = c[["in_msg_nelems", "out_msg_nelems"]].astype(float).max(axis=1)
    msg = (nelems * size).dropna()
    return float(msg.max()) if len(msg) else 0.0


@rule("comm-overlap")
def comm_overlap(facts: Facts) -> Finding | None:
    th = CATALOG["comm-overlap"].thresholds
    ps = facts.per_step
    if ps.empty or ps["comm_total_ns"].sum() == 0:
        return None
    x = _exposed_collectives(facts)
    exposed_pct = 100.0 * float(x["exposed_ns"].sum()) / float(ps["window_ns"].sum())
    if exposed_pct < th["min_exposed_comm_pct"]:
        return None
    room = (ps["compute_ns"] - ps["comm_overlapped_ns"]).clip(lower=0)
    # Only the last bucket must wait for the last gradient: a last collective larger than a
    # bucket (one bucket for the whole model) could have started its other buckets earlier.
    largest = _largest_message_bytes(facts)
    bucket = th["bucket_mb"] * 1e6
    last_share = min(1.0, bucket / largest) if largest else 1.0
    stays = x["last_ns"] * last_share
    fixable = pd.Series(np.maximum(np.minimum(x["blocking_ns"] - stays, room), 0), index=ps.index)
    # What every rank pays in a step is transfer; the excess of some ranks is waiting.
    per_step = fixable.groupby(_step_key(ps)).min()
    saving = facts.per_step_ms(float(per_step.sum()) * facts.ranks)
    if 100 * saving / max(facts.step_ms, 1e-9) < th["min_share_pct"]:
        return None
    overlap = facts.shares.get("comm_overlap_pct", 0.0)
    exposed_ms = facts.per_step_ms(float(x["exposed_ns"].sum()))
    multi = facts.ranks > 1
    return Finding(
        gpu_ms=saving,
        confidence="medium" if multi else "low",
        evidence=(
            f"collectives exposed (no compute running) {exposed_pct:.0f} % of the GPU time "
            f"({ms(exposed_ms)} per step); {overlap:.0f} % of all communication runs under "
            "compute",
            f"the last collective of each step ({ms(facts.per_step_ms(float(x['last_ns'].sum())))} "
            f"per step exposed) follows the last gradient; "
            + (
                f"its {largest / 1e6:,.0f} MB would be {largest / bucket:.0f} buckets of "
                f"{th['bucket_mb']:g} MB, of which only the last stays exposed"
                if last_share < 1
                else "it stays exposed"
            ),
            f"the part every one of the {facts.ranks} ranks pays per step: {ms(saving)}"
            if multi
            else "one rank in the trace: waiting for peers cannot be told from transfer",
        ),
        why=(
            "Collectives that run while no compute runs add their time to the step. Bucketed "
            "gradient all-reduce during backward (or prefetched FSDP gathers) hides them "
            "under compute. The saving is the exposed collective time per step less the last "
            "bucket of the step's last collective, at most the compute time not yet "
            "overlapped, and with "
            "several ranks the minimum over ranks (the excess is waiting: straggler). "
            "Point-to-point send/recv (pipeline stages) is left out."
        ),
    )


_CAUSES = {
    "host_wait_ns": "its GPU waits for its host (CPU, data loading, launches)",
    "compute_ns": "its GPU computes longer (more work, or a slower GPU: clocks, thermal)",
    "memcpy_ns": "it copies more (host transfers)",
    "idle_other_ns": "its GPU waits on something else (events, other streams)",
    "kernel_wait_ns": "gaps between its queued kernels",
}


@rule("straggler")
def straggler(facts: Facts) -> Finding | None:
    th = CATALOG["straggler"].thresholds
    ps = facts.per_step
    if facts.ranks < 2 or ps.empty:
        return None
    ps = ps.assign(key=_step_key(ps), busy_ns=ps["window_ns"] - ps["comm_ns"])
    full = ps.groupby("key")["rank"].transform("nunique") == facts.ranks
    ps = ps[full]
    if ps.empty:
        return None
    busy = ps.groupby("rank")["busy_ns"].sum()
    slow = int(busy.index[int(np.argmax(busy.to_numpy()))])
    mine = ps[ps["rank"] == slow].set_index("key")
    others = ps[ps["rank"] != slow].groupby("key")
    gap = (mine["busy_ns"] - others["busy_ns"].median()).clip(lower=0)
    saving = float(gap.mean()) / 1e6
    if 100 * saving / max(facts.step_ms, 1e-9) < th["min_gap_pct"]:
        return None
    diff = {c: float((mine[c] - others[c].median()).mean()) for c in _CAUSES}
    cause = max(diff, key=lambda c: diff[c])
    wait = float(others["comm_ns"].median().mean()) / 1e6
    theirs = float(others["busy_ns"].median().mean()) / 1e6
    return Finding(
        saving_ms=saving,
        confidence="medium",
        evidence=(
            f"rank {slow} spends {ms(float(mine['busy_ns'].mean()) / 1e6)} per step outside "
            f"exposed communication, the other ranks {ms(theirs)} (median): {ms(saving)} more",
            f"the other ranks sit {ms(wait)} per step in exposed communication, rank {slow} "
            f"{ms(float(mine['comm_ns'].mean()) / 1e6)}: they wait for it",
            f"where rank {slow} differs most: {cause.removesuffix('_ns').replace('_', ' ')} "
            f"+{ms(diff[cause] / 1e6)} per step: {_CAUSES[cause]}",
        ),
        why=(
            "Every collective completes when its last rank arrives, so the step runs at the "
            "pace of the slowest rank. The saving is, per step, the straggler's time outside "
            "exposed communication minus the median of the other ranks'."
        ),
    )


def _bus_factor(name: str, n: int) -> float:
    """Bytes on the busiest link per message byte (NCCL's busBw factors)."""
    name = name.lower()
    if "allreduce" in name or "all_reduce" in name:
        return 2.0 * (n - 1) / n
    if "gather" in name or "scatter" in name or "alltoall" in name:
        return (n - 1) / n
    return 1.0


@rule("nccl-topology")
def nccl_topology(facts: Facts) -> Finding | None:
    th = CATALOG["nccl-topology"].thresholds
    c = facts.collectives
    if facts.ranks < 2 or facts.spec is None or facts.spec.link is None:
        return None
    c = c[(c["source"] == "kernel") & (c["group_size"].fillna(0) >= 2)].copy()
    if c.empty:
        return None
    size = c["dtype"].map(COLLECTIVE_DTYPE_BYTES).astype(float)
    c["msg_bytes"] = np.maximum(c["in_msg_nelems"], c["out_msg_nelems"].fillna(0)) * size
    c["seq"] = c.groupby(["rank", "pg_name", "collective_name"], dropna=False).cumcount()
    # One collective seen by several ranks: the fastest rank's kernel is the transfer.
    inst = (
        c.groupby(["pg_name", "collective_name", "seq"], dropna=False)
        .agg(
            ranks=("rank", "nunique"),
            dur_ns=("dur_ns", "min"),
            msg_bytes=("msg_bytes", "max"),
            n=("group_size", "max"),
            name=("name", "first"),
        )
        .reset_index()
    )
    inst = inst[(inst["ranks"] >= 2) & (inst["msg_bytes"] >= th["min_msg_mb"] * 1e6)]
    if inst.empty:
        return None
    link_name, link = facts.spec.link.name, facts.spec.link.bytes_per_s
    factor = np.array(
        [
            _bus_factor(str(a), int(b))
            for a, b in zip(inst["collective_name"], inst["n"], strict=True)
        ]
    )
    bus = inst["msg_bytes"].to_numpy(float) * factor / inst["dur_ns"].to_numpy(float) * 1e9
    slow = bus < th["max_link_fraction"] * link
    if not slow.any():
        return None
    s = inst[slow]
    ideal = s["msg_bytes"].to_numpy(float) * factor[slow] / (th["link_efficiency"] * link) * 1e9
    ps = facts.per_step
    exposed = float(ps["comm_ns"].sum()) / max(float(ps["comm_total_ns"].sum()), 1.0)
    # Instances are counted once per run; per_step_ms divides by ranks as well.
    excess = float(np.maximum(s["dur_ns"].to_numpy(float) - ideal, 0).sum()) * facts.ranks
    saving = facts.per_step_ms(excess * exposed)
    if 100 * saving / max(facts.step_ms, 1e-9) < th["min_share_pct"]:
        return None
    return Finding(
        gpu_ms=saving,
        confidence="medium",
        evidence=(
            f"{len(s)} collectives of {float(s['msg_bytes'].median()) / 1e6:,.0f} MB (median) "
            f"reach {float(np.median(bus[slow])) / 1e9:.1f} GB/s bus bandwidth on the fastest "
            f"rank; the {link_name} link carries {link / 1e9:.0f} GB/s per direction",
            f"{100 * exposed:.0f} % of the communication time is exposed",
            f"kernels: {', '.join(sorted(set(s['name'].astype(str)))[:2])}",
        ),
        why=(
            "Bus bandwidth = message bytes × the collective's bus factor (all-reduce 2(n−1)/n) "
            "/ the fastest rank's kernel time, which leaves out waiting for peers. Far below "
            "the link, the traffic takes another path (PCIe, host memory, the network) or "
            "NCCL picked a poor algorithm. The saving is each collective's time above its "
            f"bytes at {th['link_efficiency']:g} × the link, times the exposed share."
        ),
        kernels=tuple(sorted(set(s["name"].astype(str)))[:2]),
    )


RULES: tuple[Rule, ...] = (comm_overlap, straggler, nccl_topology)
