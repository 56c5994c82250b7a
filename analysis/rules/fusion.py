"""Rules about work split over too many kernels: unfused attention, chains of memory-bound
elementwise kernels, per-parameter optimizer kernels. Each saving is the time of the kernels a
fused version would not run, with the fused kernel re-timed from the run's own rates."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from analysis.facts import Facts
from analysis.model.dtypes import BYTES_PER_ELEMENT
from analysis.model.gemm import gemm_mnk
from analysis.roofline import MATRIX_CLASSES
from analysis.rules.catalog import CATALOG
from analysis.rules.measures import kernels_in_ranges, names_matching, top_names
from analysis.rules.registry import Finding, Rule, rule
from analysis.text import ms
from analysis.work.args import dims, types

_MEMORY_CLASSES = ("elementwise", "norm", "reduction", "softmax", "copy")
# Inductor folds pointwise work into a reduction's kernel but keeps one kernel per reduction
# (D83): a fused chain still launches one kernel for each of these in it.
_REDUCING_CLASSES = ("norm", "reduction", "softmax")
_PARAM_STATE_BYTES = 28  # AdamW, fp32: read param, grad, 2 moments; write param, 2 moments
_FUSED_OPTIMIZER = r"multi_tensor_apply|fused_adam|FusedAdam|fused_sgd|_fused_"
_INDUCTOR = re.compile(r"^triton_(poi|per|red|tem)_")
# A fused AdamW step's host time per parameter tensor (its Python loop over the params):
# 1.0 ms for 76 tensors, 1.6 ms for 148 on the tune pairs' "after" runs (optimizer-gpt2,
# optimizer-gpt2-124m), 13 and 11 µs.
_FUSED_HOST_NS_PER_TENSOR = 12_000


def score_signatures(facts: Facts) -> tuple[set[int], set[int], int]:
    """Op signatures that read or write [..., S, S] attention scores (S >= min_seq), the ones
    among them that are softmaxes, and the largest S."""
    return facts.memo("score_signatures", lambda: _score_signatures(facts))


def _score_signatures(facts: Facts) -> tuple[set[int], set[int], int]:
    # The softmaxes over [..., S, S] name the score tensors; an op touches the scores when
    # one of its inputs has a score shape (also with the leading dimensions flattened, as
    # matmul hands them to bmm), or when it is a GEMM whose output is one (QKᵀ). An
    # activation [B, S, D] with D = S (BERT's 512 × 512) is no score: no softmax runs on it.
    min_seq = int(CATALOG["fused-attention"].thresholds["min_seq"])
    sig = facts.ops.drop_duplicates("signature")
    rows = list(zip(sig["signature"], sig["name"], map(dims, sig["input_dims"]), strict=True))
    scores: set[tuple[int, ...]] = set()
    for _, name, shapes in rows:
        if "softmax" in str(name):
            for s in shapes:
                if len(s) >= 3 and s[-1] == s[-2] >= min_seq:
                    scores |= {tuple(s), (math.prod(s[:-2]), s[-2], s[-1])}
    found: set[int] = set()
    soft: set[int] = set()
    for sg, name, shapes in rows:
        mnk = gemm_mnk(str(name), shapes) if len(shapes) >= 2 and len(shapes[0]) >= 3 else None
        makes = mnk is not None and (math.prod(shapes[0][:-2]), mnk[0], mnk[1]) in scores
        if makes or any(tuple(s) in scores for s in shapes):
            found.add(int(sg))
            if "softmax" in str(name):
                soft.add(int(sg))
    return found, soft, max((s[-1] for s in scores), default=0)


def is_causal(facts: Facts, seq: int) -> bool:
    """A causal (decoder) mask in the trace: an op reads a [B, 1, S, S] mask, one per
    sequence broadcast over the heads (GPT-2's torch.where, Llama's additive causal mask), or
    builds one with tril/triu. A padding mask is [B, 1, 1, S] and a vision or encoder model
    has no S x S mask at all: both are bidirectional (BERT's [1, 512, 512] position
    embeddings are 3-D, no mask)."""
    sig = facts.ops.drop_duplicates("signature")
    for name, shapes in zip(sig["name"].astype(str), map(dims, sig["input_dims"]), strict=True):
        for s in shapes:
            square = len(s) >= 2 and s[-1] == s[-2] == seq
            if square and (re.search(r"tril|triu", name) or (len(s) == 4 and s[1] == 1)):
                return True
    return False


def attention_fix(causal: bool, training: bool) -> str:
    """SDPA written for the case: is_causal only for a causal mask, dropout only in training."""
    mask = "is_causal=True" if causal else "attn_mask=padding_mask"  # padding_mask: or None
    drop = ", dropout_p=p if self.training else 0.0" if training else ""
    note = "causal (decoder)" if causal else "bidirectional (encoder, vision): no is_causal"
    return (
        f"# q, k, v: [batch, heads, seq, head_dim]; {note}\n"
        f"y = torch.nn.functional.scaled_dot_product_attention(q, k, v, {mask}{drop})"
    )


def _rows_of(facts: Facts, signatures: set[int]) -> pd.DataFrame:
    ids = facts.ops[facts.ops["signature"].isin(signatures)][["rank", "external_id"]]
    return facts.kernels.merge(
        ids, left_on=["rank", "op_external_id"], right_on=["rank", "external_id"]
    )


def _score_input(facts: Facts, soft: set[int]) -> tuple[list[int], str]:
    """The first softmax's [..., S, S] input: its shape and dtype (a masked softmax's first
    3-D input can be its [B, H, S, 1] mask)."""
    scores = facts.ops[facts.ops["signature"].isin(soft)].drop_duplicates("signature")
    for shapes, kinds in zip(map(dims, scores["input_dims"]), map(types, scores["input_types"]),
                             strict=True):  # fmt: skip
        for i, shape in enumerate(shapes):
            if len(shape) >= 3 and shape[-1] == shape[-2]:
                return shape, kinds[i] if i < len(kinds) else "?"
    return [], "?"


@rule("fused-attention")
def fused_attention(facts: Facts) -> Finding | None:
    th = CATALOG["fused-attention"].thresholds
    sigs, soft, seq = score_signatures(facts)
    if not soft:  # no softmax over S×S scores: not attention materialised in HBM
        return None
    rows = _rows_of(facts, sigs)
    cur_ms = facts.per_step_ms(float(rows["dur_ns"].sum()))
    if 100 * cur_ms / max(facts.step_ms, 1e-9) < th["min_share_pct"]:
        return None
    mm = rows[rows["op_class"].isin(MATRIX_CLASSES) & rows["flops"].notna()]
    k = facts.kernels
    others = k[k["op_class"].isin(MATRIX_CLASSES) & k["flops"].notna()]
    others = others[~others["op_external_id"].isin(rows["op_external_id"])]
    rate = float(others["flops"].sum()) / float(others["dur_ns"].sum()) if len(others) else 0.0
    fused_ms = facts.per_step_ms(float(mm["flops"].sum()) / rate) if rate else 0.0
    shape, dtype = _score_input(facts, soft)
    elem = BYTES_PER_ELEMENT.get(dtype, 2)
    mb = math.prod(shape) * elem / 1e6 if shape else 0.0
    ops = top_names(rows, "op_name", 5)
    # One fused kernel per softmax (forward, backward) replaces the S×S kernels' launches.
    fused = int(rows["op_name"].astype(str).str.contains("softmax").sum())
    launches = max(len(rows) - fused, 0) / (facts.windows * facts.ranks)
    host_ms = launches * facts.host_ms_per_launch
    return Finding(
        gpu_ms=max(cur_ms - fused_ms, 0.0),
        host_ms=host_ms,
        confidence="medium",
        evidence=(
            f"attention scores materialised: softmax over {shape} ({dtype}, {mb:,.0f} MB per "
            f"layer, sequence {seq}), no fused attention kernel for them",
            f"kernels reading or writing S×S tensors ({', '.join(ops)}): "
            f"{ms(cur_ms)} per step, {100 * cur_ms / facts.step_ms:.0f} % of the step",
            f"a fused kernel doing the same matmul FLOPs at the run's other matmuls' rate "
            f"({rate / 1e3:.1f} TFLOP/s): {ms(fused_ms)} per step",
            f"{launches:,.0f} fewer launches per step: {ms(host_ms)} of host time at the "
            f"run's {ms(facts.host_ms_per_launch)} of host work per kernel launched (without "
            "the profiler)",
        ),
        why=(
            "Unfused attention writes the S×S score matrix to HBM and reads it back for the "
            "mask, the softmax, dropout and the second matmul (and again in backward). A fused "
            "kernel keeps the tiles on chip: its time is the attention FLOPs at the rate this "
            "run's other matmuls reach, and its one launch replaces the unfused kernels' "
            "launches. The saving is the step without the profiler less the step with that "
            "GPU and host time removed (never below the GPU's or the host's own time)."
        ),
        kernels=top_names(rows, "name", 5),
        ops=ops,
        fix=attention_fix(is_causal(facts, seq), facts.is_training),
    )


@rule("fused-optimizer")
def fused_optimizer(facts: Facts) -> Finding | None:
    th = CATALOG["fused-optimizer"].thresholds
    k = facts.kernels
    if k.empty:
        return None
    rows = k[kernels_in_ranges(facts, "Optimizer.step#")]
    names = pd.Series(rows["name"].unique()).astype(str)
    if rows.empty or names.str.contains(_FUSED_OPTIMIZER).any():
        return None
    per_step = len(rows) / (facts.windows * facts.ranks)
    cur_ms = facts.per_step_ms(float(rows["dur_ns"].sum()))
    if per_step < th["min_kernels_per_step"] or 100 * cur_ms / facts.step_ms < th["min_share_pct"]:
        return None
    # The op run least often (but many times) runs once per parameter: its first inputs'
    # sizes add up to the parameter count.
    ops = facts.ops.merge(
        rows[["rank", "op_external_id"]].drop_duplicates(),
        left_on=["rank", "external_id"],
        right_on=["rank", "op_external_id"],
    )
    counts = ops["name"].value_counts()
    counts = counts[counts >= 10 * facts.windows * facts.ranks]
    params, tensors = 0.0, 0.0
    if len(counts):
        once = ops[ops["name"] == counts.idxmin()]
        calls = once.groupby("signature")["input_dims"].agg(["first", "size"])
        numel = [math.prod(d[0]) if d and d[0] else 0 for d in map(dims, calls["first"])]
        params = float(np.dot(numel, calls["size"])) / (facts.windows * facts.ranks)
        tensors = float(counts.min()) / (facts.windows * facts.ranks)
    bw = facts.ceilings.bandwidth_bytes_per_s if facts.ceilings else 0.0
    fused_ms = params * _PARAM_STATE_BYTES / bw * 1e3 if bw else 0.0
    # The host's own time in the step's Optimizer.step (without the profiler) goes, but for
    # a fused step's loop over the tensors.
    host_ms = facts.region_host_ms("optimizer", "Optimizer.step#")
    fused_host_ms = tensors * _FUSED_HOST_NS_PER_TENSOR / 1e6
    return Finding(
        gpu_ms=max(cur_ms - fused_ms, 0.0),
        host_ms=max(host_ms - fused_host_ms, 0.0),
        confidence="high" if params else "medium",
        evidence=(
            f"optimizer step: {per_step:,.0f} kernels per step "
            f"({', '.join(top_names(rows, 'op_name', 4))}), {ms(cur_ms)} of GPU time",
            f"{params / 1e6:,.1f} M parameters in {tensors:,.0f} tensors: one fused pass "
            f"moves {params * _PARAM_STATE_BYTES / 1e9:.2f} GB, {ms(fused_ms)} at the "
            "bandwidth ceiling",
            f"the host spends {ms(host_ms)} per step in Optimizer.step without the profiler; "
            f"a fused step about {ms(fused_host_ms)}",
        ),
        why=(
            "An optimizer without foreach/fused runs several small kernels per parameter "
            "tensor; a fused one reads and writes each state once in a few launches. The "
            "saving removes the optimizer's GPU kernel time above one pass over the states at "
            "the bandwidth ceiling, and the host's time issuing them (Optimizer.step without "
            f"the profiler, less {_FUSED_HOST_NS_PER_TENSOR / 1e3:g} µs per tensor for the "
            "fused step's own loop)."
        ),
        kernels=top_names(rows, "name", 5),
        ops=top_names(rows, "op_name", 5),
    )


@rule("kernel-fusion")
def kernel_fusion(facts: Facts) -> Finding | None:
    th = CATALOG["kernel-fusion"].thresholds
    k = facts.kernels
    if k.empty:
        return None
    attention, _, _ = score_signatures(facts)
    skip = set(_rows_of(facts, attention)["op_external_id"].dropna()) if attention else set()
    # Inductor's kernels (torch.compile) are fused already: no chain advice on them.
    mem = (
        k["op_class"].isin(_MEMORY_CLASSES)
        & ~kernels_in_ranges(facts, "Optimizer.step#")
        & ~k["op_external_id"].isin(skip)
        & ~names_matching(k["name"], _INDUCTOR)
    ).to_numpy()
    order = np.lexsort((k["ts_ns"].to_numpy(), k["rank"].to_numpy()))
    ts = k["ts_ns"].to_numpy(np.int64)[order]
    end = ts + k["dur_ns"].to_numpy(np.int64)[order]
    rank = k["rank"].to_numpy()[order]
    m = mem[order]
    same_rank = np.concatenate([[False], rank[1:] == rank[:-1]])
    # Kernels one after another, whatever the gap: Inductor fuses by the graph, not the
    # timing, and on a host-bound step the GPU waits tens of µs between them (D96).
    link = m & np.concatenate([[False], m[:-1]]) & same_rank  # continues the chain before it
    chain_id = np.cumsum(~link)
    dur = (end - ts).astype(float)
    # Kernels of legacy traces have no launching op: their kernel class names them.
    label = k["op_name"].astype(object).where(k["op_name"].notna(), k["kernel_class"])
    reducing = k["op_class"].isin(_REDUCING_CLASSES).to_numpy()[order][m]
    c = pd.DataFrame(
        {"chain": chain_id[m], "dur": dur[m], "op": label.to_numpy()[order][m], "red": reducing}
    )
    g = c.groupby("chain").agg(
        n=("dur", "size"), total=("dur", "sum"), longest=("dur", "max"), red=("red", "sum")
    )
    g = g[g["n"] >= th["min_chain"]]
    if g.empty:
        return None
    saving = facts.per_step_ms(float((g["total"] - g["longest"]).sum()))
    if 100 * saving / max(facts.step_ms, 1e-9) < th["min_share_pct"]:
        return None
    # A compiled chain still launches about kept_per_reduction kernels per reduction in it
    # (at least one, at most the chain): the other launches' host time goes too (D96).
    steps = facts.windows * facts.ranks
    n = g["n"].to_numpy()
    kept = np.minimum(np.maximum(th["kept_per_reduction"] * g["red"].to_numpy(), 1), n)
    launches = float((n - kept).sum()) / steps
    host_ms = launches * facts.host_ms_per_launch
    chained = c[c["chain"].isin(g.index)]
    biggest = (g["total"] - g["longest"]).idxmax()
    ops = chained.loc[chained["chain"] == biggest, "op"].astype(str).tolist()
    example = " → ".join(ops[:6]) + (f" … ({len(ops)} kernels)" if len(ops) > 6 else "")
    return Finding(
        gpu_ms=saving,
        host_ms=host_ms,
        confidence="medium",
        evidence=(
            f"{len(g) / steps:,.0f} chains per step of ≥ {int(th['min_chain'])} memory-bound "
            f"kernels one after another ({g['n'].mean():.1f} kernels each on average), "
            f"{ms(facts.per_step_ms(float(g['total'].sum())))} per step",
            f"the chain with most to gain: {example}",
            f"{launches:,.0f} fewer launches per step (a compiled chain keeps about "
            f"{th['kept_per_reduction']:g} kernels per normalisation, reduction or softmax in "
            f"it): {ms(host_ms)} of host time at the run's host work per kernel launched "
            "(without the profiler)",
        ),
        why=(
            "Each kernel of an unfused chain writes its result to HBM and the next reads it "
            "back. A fused kernel reads the inputs and writes the output once: its time is "
            "estimated as the chain's longest kernel; the saving is the rest of the chain. "
            "Inductor folds pointwise work into its kernels, but a compiled normalisation or "
            "reduction still takes several (the statistics, their use, the backward's; the "
            "count is in the evidence), so only the other launches' host time goes."
        ),
        ops=tuple(chained["op"].astype(str).value_counts().index[:5]),
    )


RULES: tuple[Rule, ...] = (fused_attention, fused_optimizer, kernel_fusion)
