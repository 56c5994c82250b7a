"""Whether two runs can be compared like for like, and which pair to compare by default.

A comparison is read as "my change did this", which holds only for the same workload on the
same kind of GPU. So before any delta the Compare page says how the runs differ:

- **device**: the GPU names (deviceProperties);
- **model**: training against inference (autograd ran a backward pass or not); the model
  width (the largest embedding table's dimension); convolutions in one and not the other;
  and, when neither run replays CUDA graphs (whose kernels carry no op), how much of the GPU
  time per op name the runs share (histogram intersection of the op mixes: 1.00 for the same
  model with a data-loader fix, 0.43 for GPT-2 fp32 → bf16 with SDPA, 0.16 for BERT against
  Qwen, 0.01 for ResNet-50 against GPT-2);
- **batch**: tokens per step (the run tag, else the token ids fed to the largest embedding
  table), else the batch of the convolutions' input;
- **precision**: the precision doing most of the matrix (GEMM, convolution, attention) time.

MFU is measured against one reference peak for both runs (the first run's device at bf16,
dense): against each run's own precision peak a 2× faster bf16 run would read as a drop.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass

import pandas as pd

from analysis.facts import Facts
from analysis.roofline import MATRIX_CLASSES
from analysis.specs import DeviceSpec

MIN_OP_MIX = 0.25
MIN_CONV_SHARE = 0.05
MIN_GRAPH_SHARE = 0.5
REFERENCE_PRECISIONS = ("bf16", "fp16", "tf32", "fp32")


@dataclass(frozen=True, slots=True)
class Pair:
    """The runs to compare (before, after) and why these two."""

    before: str
    after: str
    reason: str


def default_pair(runs: pd.DataFrame) -> Pair | None:
    """The two latest runs of the newest name that has two, else the two newest runs.

    `runs` is the store's `runs` table, newest first; None with fewer than two runs."""
    if len(runs) < 2:
        return None
    ids, names = runs["run_id"].tolist(), runs["name"].tolist()
    for i, name in enumerate(names):
        same = [j for j, n in enumerate(names) if n == name]
        if len(same) >= 2 and same[0] == i:
            why = f"the two latest runs named {name}"
            if i > 0:
                why += f" (the newest run, {names[0]}, has no earlier run of its name)"
            return Pair(ids[same[1]], ids[same[0]], why)
    return Pair(
        ids[1],
        ids[0],
        "no two runs share a name, so these are the two newest; they may be different "
        "workloads (see the differences below)",
    )


@dataclass(frozen=True)
class RunProfile:
    """What a comparison must hold equal: device, mode, model width, layers, batch,
    precision, and the op mix (GPU time share per op name)."""

    name: str
    device: str | None
    training: bool
    width: int | None  # the largest embedding table's dimension
    conv_share: float  # of GPU time
    graph_share: float  # of kernels replayed from CUDA graphs
    tokens_per_step: float | None
    tokens_source: str  # "tag", "embedding" or ""
    batch: str | None  # "8×1024 token ids", "64 images"
    precision: str | None
    op_mix: pd.Series


def run_profile(facts: Facts) -> RunProfile:
    """The comparability facts of one run."""
    work = facts.all_work
    dur = work["dur_ns"].astype(float)
    total = float(dur.sum()) or 1.0
    mix = dur.groupby(work["op_name"].astype(object).fillna("(no op)")).sum() / total
    matrix = work[work["op_class"].isin(MATRIX_CLASSES) & (work["precision"] != "")]
    by_prec = matrix["dur_ns"].groupby(matrix["precision"]).sum()
    graphs, kernels = facts.graph_launched
    width, ids = _embedding(facts)
    tag = facts.run.tags.get("tokens_per_step")
    tokens = float(tag) if tag else _tokens_per_step(facts)
    batch = f"{'×'.join(map(str, ids))} token ids" if ids else _image_batch(facts.ops)
    return RunProfile(
        name=facts.run.name,
        device=facts.run.device_name,
        training=facts.is_training,
        width=width,
        conv_share=float(dur[work["op_class"] == "conv"].sum()) / total,
        graph_share=graphs / kernels if kernels else 0.0,
        tokens_per_step=tokens,
        tokens_source="tag" if tag else ("embedding" if tokens else ""),
        batch=batch,
        precision=str(by_prec.idxmax()) if len(by_prec) else None,
        op_mix=mix,
    )


def _dims(text: object) -> list[list[int]]:
    try:
        value = json.loads(str(text))
    except ValueError:
        return []
    return [d for d in value if isinstance(d, list)] if isinstance(value, list) else []


def _largest_table(facts: Facts) -> pd.DataFrame:
    """The calls of aten::embedding on the largest table (the vocabulary), with the table
    (rows, dim) and the token ids' shape."""
    emb = facts.shaped_ops("aten::embedding")
    dims = [_dims(t) for t in emb["input_dims"]]
    ok = [len(d) >= 2 and len(d[0]) == 2 for d in dims]
    rows = pd.DataFrame({
        "step": emb["step"].to_numpy()[ok] if len(emb) else [],
        "table": [tuple(d[0]) for d, k in zip(dims, ok, strict=True) if k],
        "ids": [tuple(d[1]) for d, k in zip(dims, ok, strict=True) if k],
    })  # fmt: skip
    if rows.empty:
        return rows
    biggest = max(rows["table"], key=lambda t: t[0])
    largest: pd.DataFrame = rows[rows["table"] == biggest]
    return largest


def _embedding(facts: Facts) -> tuple[int | None, tuple[int, ...]]:
    rows = _largest_table(facts)
    if rows.empty:
        return None, ()
    ids = Counter(rows["ids"]).most_common(1)[0][0]
    return int(rows["table"].iloc[0][1]), ids


def _tokens_per_step(facts: Facts) -> float | None:
    """Token ids fed to the largest embedding table per profiled step (median over steps)."""
    rows = _largest_table(facts)
    rows = rows[rows["step"].notna()] if len(rows) else rows
    if rows.empty:
        return None
    numel = pd.Series([math.prod(ids) for ids in rows["ids"]], index=rows.index)
    return float(numel.groupby(rows["step"]).sum().median())


def _image_batch(ops: pd.DataFrame) -> str | None:
    """The most frequent batch of the convolutions' input, '64 images'; None without any."""
    conv = ops[ops["name"].astype(str).str.contains("convolution", regex=False)]
    firsts = [d[0][0] for d in map(_dims, conv["input_dims"]) if d and len(d[0]) == 4]
    return f"{Counter(firsts).most_common(1)[0][0]} images" if firsts else None


def op_mix_overlap(a: pd.Series, b: pd.Series) -> float:
    """The share of GPU time both op mixes hold (sum over op names of the smaller share)."""
    both = pd.concat([a, b], axis=1).fillna(0.0)
    return float(both.min(axis=1).sum())


def differences(a: RunProfile, b: RunProfile) -> list[str]:
    """Why the runs are not like for like, one sentence each (empty: comparable)."""
    out = []
    if a.device != b.device:
        out.append(
            f"Different devices: {a.device or 'no GPU'} and {b.device or 'no GPU'}; times "
            "and rates depend on the hardware as much as on the change."
        )
    if a.training != b.training:
        mode = {True: "trains", False: "runs inference"}
        out.append(
            f"Different workloads: {a.name} {mode[a.training]}, {b.name} {mode[b.training]}."
        )
    if a.width and b.width and a.width != b.width:
        out.append(f"Different models: embedding width {a.width} and {b.width}.")
    if (a.conv_share >= MIN_CONV_SHARE) != (b.conv_share >= MIN_CONV_SHARE):
        conv = a.name if a.conv_share >= MIN_CONV_SHARE else b.name
        out.append(f"Different models: only {conv} spends its time in convolutions.")
    if max(a.graph_share, b.graph_share) < MIN_GRAPH_SHARE:
        overlap = op_mix_overlap(a.op_mix, b.op_mix)
        if overlap < MIN_OP_MIX:
            out.append(
                f"Different op mix: the runs share {100 * overlap:.0f} % of their GPU time "
                "per op name; they look like different models."
            )
    if a.batch and b.batch and a.batch != b.batch:
        out.append(
            f"Different batch: {a.batch} and {b.batch}; compare tokens/s rather than the step."
        )
    if a.precision and b.precision and a.precision != b.precision:
        out.append(
            f"Different precision of the matrix work: {a.precision} and {b.precision} (that may "
            "be the change itself); MFU below uses one reference peak for both."
        )
    return out


@dataclass(frozen=True, slots=True)
class ReferencePeak:
    """The one peak both runs' MFU is measured against."""

    label: str  # "H200 SXM 141GB's dense BF16 peak (989 TFLOP/s)"
    flop_per_s: float


def reference_peak(*specs: DeviceSpec | None) -> ReferencePeak | None:
    """The first known spec's dense peak at the first of REFERENCE_PRECISIONS it has."""
    for spec in specs:
        if spec is None:
            continue
        for p in REFERENCE_PRECISIONS:
            peak = spec.peak_flop_per_s(p)
            if peak:
                return ReferencePeak(
                    f"{spec.name}'s dense {p.upper()} peak ({peak / 1e12:,.0f} TFLOP/s)", peak
                )
    return None
