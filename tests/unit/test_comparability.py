"""Which pair to compare and how two runs differ, on hand-built runs and profiles."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pytest

from analysis.comparability import (
    RunProfile,
    default_pair,
    differences,
    op_mix_overlap,
    reference_peak,
)
from analysis.specs import match_spec


def runs(*names: str) -> pd.DataFrame:
    """The runs table, newest first, ids r0 (newest), r1, …"""
    return pd.DataFrame({"run_id": [f"r{i}" for i in range(len(names))], "name": list(names)})


def test_default_pair_prefers_the_latest_two_of_one_name() -> None:
    p = default_pair(runs("llama", "llama", "vit"))
    assert (p.before, p.after) == ("r1", "r0")
    assert p.reason == "the two latest runs named llama"
    # the newest run has no earlier run of its name: the next name that has two
    p = default_pair(runs("vit", "llama", "bert", "llama"))
    assert (p.before, p.after) == ("r3", "r1")
    assert "the newest run, vit, has no earlier run of its name" in p.reason
    p = default_pair(runs("vit", "llama"))
    assert (p.before, p.after) == ("r1", "r0")
    assert p.reason.startswith("no two runs share a name")
    assert default_pair(runs("vit")) is None


def profile(**kw: object) -> RunProfile:
    base = RunProfile(
        name="a", device="NVIDIA H200", training=True, width=768, conv_share=0.0,
        graph_share=0.0, tokens_per_step=8192.0, tokens_source="embedding",
        batch="8×1024 token ids", precision="bf16",
        op_mix=pd.Series({"aten::mm": 0.7, "aten::add": 0.3}),
    )  # fmt: skip
    return replace(base, **kw)  # type: ignore[arg-type]


def test_the_same_workload_has_no_difference() -> None:
    assert differences(profile(), profile(name="b")) == []


def test_each_difference_is_named() -> None:
    other = profile(
        name="b", device="NVIDIA H100 80GB HBM3", training=False, width=2048, conv_share=0.6,
        batch="64 images", precision="fp32", op_mix=pd.Series({"aten::conv": 1.0}),
    )  # fmt: skip
    d = differences(profile(), other)
    assert [x.split(":")[0] for x in d] == [
        "Different devices", "Different workloads", "Different models", "Different models",
        "Different op mix", "Different batch", "Different precision of the matrix work",
    ]  # fmt: skip
    # CUDA-graph replays carry no op: their op mix says nothing about the model
    graphs = profile(name="b", graph_share=0.9, op_mix=pd.Series({"(no op)": 1.0}))
    assert differences(profile(), graphs) == []


def test_op_mix_overlap_is_the_shared_share() -> None:
    a = pd.Series({"mm": 0.5, "add": 0.5})
    assert op_mix_overlap(a, pd.Series({"mm": 0.2, "softmax": 0.8})) == pytest.approx(0.2)
    assert op_mix_overlap(a, a) == pytest.approx(1.0)


def test_reference_peak_is_the_first_known_device_at_bf16() -> None:
    h200, a100 = match_spec("NVIDIA H200"), match_spec("NVIDIA A100-SXM4-80GB")
    ref = reference_peak(None, h200, a100)
    assert ref is not None
    assert h200 is not None
    assert ref.flop_per_s == h200.peak_flop_per_s("bf16")
    assert ref.label.startswith(f"{h200.name}'s dense BF16 peak (")
    assert reference_peak(None, None) is None
