"""The catalog: every id of ARCHITECTURE.md, at least 18 with real detection, the README's
table generated from it."""

import ast

from helpers.paths import REPO

from analysis.rules.catalog import CATALOG, markdown
from analysis.rules.fusion import attention_fix
from analysis.rules.recommend import RULES

ARCHITECTURE_IDS = {
    "mixed-precision", "tf32", "fp8", "tensor-core-alignment", "fused-attention",
    "kernel-fusion", "fused-optimizer", "cuda-graphs", "gpu-starvation", "host-sync",
    "pageable-memcpy", "small-batch", "memory-headroom", "comm-overlap", "straggler",
    "nccl-topology", "power-throttling", "decode-batching", "weight-quantization",
    "paged-kv-cache", "speculative-decoding", "sequence-packing",
}  # fmt: skip


def test_catalog_holds_every_architecture_id() -> None:
    assert set(CATALOG) >= ARCHITECTURE_IDS


def test_detecting_rules_are_documented_and_the_rest_say_what_they_need() -> None:
    assert len(RULES) >= 18
    for rule_id, entry in CATALOG.items():
        if rule_id in RULES:
            assert entry.detects
            assert entry.saving
            assert entry.fix
            assert entry.thresholds
        else:
            assert not entry.detects
            assert entry.needs


def test_readme_catalog_is_the_generated_one() -> None:
    readme = (REPO / "README.md").read_text()
    block = readme.split("<!-- catalog:start -->\n")[1].split("<!-- catalog:end -->")[0]
    assert block == markdown()


def test_attention_fix_is_python_and_drops_what_the_case_lacks() -> None:
    for causal in (True, False):
        for training in (True, False):
            fix = attention_fix(causal, training)
            ast.parse(fix)
            assert ("is_causal=True" in fix) is causal
            assert ("dropout_p" in fix) is training
