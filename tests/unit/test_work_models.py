"""FLOPs and bytes per op family, computed by hand from shapes recorded in real traces.

The argument strings are copied from the H200 fixtures (train_gpt2_*, hf_llama, resnet50,
microops): the JSON text torch.profiler wrote into Input Dims / Input type / Concrete Inputs.
Those strings are long and kept verbatim, hence no line-length check here.
"""
# ruff: noqa: E501

from __future__ import annotations

import json

import pandas as pd

from analysis.work import op_work, work_table

F, BF = '"float"', '"c10::BFloat16"'


def work(name: str, dims: str, types: str, concrete: str | None = None):  # type: ignore[no-untyped-def]
    n = len(json.loads(dims))
    return op_work(name, dims, types, concrete or json.dumps([""] * n))


def test_mm() -> None:
    w = work("aten::mm", "[[4096, 4096], [4096, 4096]]", f"[{BF}, {BF}]")
    assert w.op_class == "gemm"
    assert w.precision == "bf16"
    assert w.flops == 2 * 4096**3
    assert w.bytes == 3 * 4096 * 4096 * 2


def test_addmm_counts_the_bias() -> None:
    # GPT-2 qkv projection: bias [2304] + [8192, 768] @ [768, 2304]
    w = work(
        "aten::addmm",
        "[[2304], [8192, 768], [768, 2304], [], []]",
        f'[{BF}, {BF}, {BF}, "Scalar", "Scalar"]',
        '["", "", "", "1", "1"]',
    )
    m, k, n = 8192, 768, 2304
    assert w.flops == 2 * m * n * k + m * n
    assert w.bytes == (m * k + k * n + m * n + n) * 2


def test_bmm_and_baddbmm() -> None:
    w = work("aten::bmm", "[[84, 1000, 1000], [84, 1000, 64]]", f"[{F}, {F}]")
    assert w.flops == 2 * 84 * 1000 * 64 * 1000
    assert w.bytes == 84 * (1000 * 1000 + 1000 * 64 + 1000 * 64) * 4
    b = work(
        "aten::baddbmm",
        "[[4, 8, 16], [4, 8, 32], [4, 32, 16], [], []]",
        f'[{F}, {F}, {F}, "Scalar", "Scalar"]',
    )
    assert b.flops == 2 * 4 * 8 * 16 * 32 + 4 * 8 * 16


def test_linear_and_matmul_front_ops() -> None:
    w = work("aten::linear", "[[7, 1000, 768], [2304, 768], [2304]]", f"[{F}, {F}, {F}]")
    m = 7 * 1000
    assert w.flops == 2 * m * 2304 * 768 + m * 2304
    mm = work("aten::matmul", "[[4, 16, 256, 128], [4, 16, 128, 256]]", f"[{BF}, {BF}]")
    assert mm.flops == 2 * 64 * 256 * 256 * 128


def test_convolution_forward_and_backward() -> None:
    # ResNet-50 stem: [64, 3, 224, 224] * [64, 3, 7, 7], stride 2, padding 3 -> 112 × 112
    w = work(
        "aten::convolution",
        "[[64, 3, 224, 224], [64, 3, 7, 7], [], [], [], [], [], [], []]",
        f'[{F}, {F}, "", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"]',
        '["", "", "", "[2, 2]", "[3, 3]", "[1, 1]", "False", "[0, 0]", "1"]',
    )
    out = 64 * 64 * 112 * 112
    assert w.op_class == "conv"
    assert w.flops == 2 * out * 3 * 7 * 7
    assert w.bytes == (64 * 3 * 224 * 224 + 64 * 3 * 7 * 7 + out) * 4
    # 1x1 conv backward, input and weight gradients only (output_mask [True, True, False])
    b = work(
        "aten::convolution_backward",
        "[[64, 2048, 7, 7], [64, 512, 7, 7], [2048, 512, 1, 1], [], [], [], [], [], [], [], []]",
        f'[{F}, {F}, {F}, "ScalarList", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar", "ScalarList"]',
        '["", "", "", "[0]", "[1, 1]", "[0, 0]", "[1, 1]", "False", "[0, 0]", "1", "[True, True, False]"]',
    )
    one = 2 * (64 * 2048 * 7 * 7) * 512
    assert b.flops == 2 * one
    g, x, wt = 64 * 2048 * 49, 64 * 512 * 49, 2048 * 512
    assert b.bytes == (g + x + wt + x + wt) * 4


def test_cudnn_attention_causal_halves_the_work() -> None:
    dims = "[[8, 12, 1024, 64], [8, 12, 1024, 64], [8, 12, 1024, 64], [], [], [], [], [], []]"
    types = f'[{BF}, {BF}, {BF}, "", "Scalar", "Scalar", "Scalar", "Scalar", ""]'
    causal = work(
        "aten::_scaled_dot_product_cudnn_attention",
        dims,
        types,
        '["", "", "", "", "True", "0.", "True", "False", ""]',
    )
    full = work(
        "aten::_scaled_dot_product_cudnn_attention",
        dims,
        types,
        '["", "", "", "", "True", "0.", "False", "False", ""]',
    )
    b, h, s, d = 8, 12, 1024, 64
    assert full.flops == 2 * b * h * s * s * (d + d)
    assert causal.flops == full.flops / 2
    assert causal.bytes == 4 * b * h * s * d * 2
    assert causal.note == ""


def test_gqa_attention_uses_kv_heads_for_bytes() -> None:
    # Llama: 16 query heads, 4 KV heads, head dim 128, 256 tokens, causal
    w = work(
        "aten::_cudnn_attention_forward",
        "[[4, 16, 256, 128], [4, 4, 256, 128], [4, 4, 256, 128], [], [], [], [], [], [], [], [], [], []]",
        f'[{BF}, {BF}, {BF}, "", "", "", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar"]',
        '["", "", "", "", "", "", "256", "256", "False", "0.", "True", "False", "0.088"]',
    )
    assert w.flops == 2 * 4 * 16 * 256 * 256 * 256 / 2
    assert w.bytes == (2 * 4 * 16 * 256 * 128 + 2 * 4 * 4 * 256 * 128) * 2


def test_attention_backward_is_two_and_a_half_forwards() -> None:
    q = "[8, 12, 1024, 64]"
    dims = f"[{q}, {q}, {q}, {q}, {q}, [8, 12, 1024, 1]" + ", []" * 10 + "]"
    types = f"[{BF}, {BF}, {BF}, {BF}, {BF}, {F}" + ', "Scalar"' * 10 + "]"
    concrete = json.dumps([""] * 14 + ["True", ""])
    w = work("aten::_scaled_dot_product_cudnn_attention_backward", dims, types, concrete)
    fwd = 2 * 8 * 12 * 1024 * 1024 * 128 / 2
    assert w.flops == 2.5 * fwd
    assert w.bytes == 8 * 8 * 12 * 1024 * 64 * 2  # q k v o do read, dq dk dv written


def test_attention_without_a_recorded_flag_says_so() -> None:
    w = work(
        "aten::_scaled_dot_product_flash_attention",
        "[[1, 2, 8, 4], [1, 2, 8, 4], [1, 2, 8, 4]]",
        f"[{BF}, {BF}, {BF}]",
    )
    assert w.flops == 2 * 2 * 8 * 8 * 8
    assert "is_causal not recorded" in w.note


def test_elementwise_broadcasts_and_reads_each_input() -> None:
    w = work("aten::add", "[[67108864], [67108864], []]", f'[{F}, {F}, "Scalar"]', '["", "", "1"]')
    assert w.flops == 67108864
    assert w.bytes == 3 * 67108864 * 4
    m = work("aten::mul", "[[8, 1024, 768], [768]]", f"[{BF}, {BF}]")
    assert m.flops == 8 * 1024 * 768
    assert m.bytes == (2 * 8 * 1024 * 768 + 768) * 2
    assert work("aten::gelu", "[[10, 10], []]", f'[{F}, ""]').bytes == 2 * 100 * 4


def test_softmax_norm_and_reduction() -> None:
    n = 4096 * 4096
    s = work("aten::_softmax", "[[4096, 4096], [], []]", f'[{F}, "Scalar", "Scalar"]')
    assert (s.flops, s.bytes) == (3 * n, 2 * n * 4)
    ln = work(
        "aten::native_layer_norm",
        "[[4096, 4096], [], [4096], [4096], []]",
        f'[{F}, "ScalarList", {F}, {F}, "Scalar"]',
    )
    assert (ln.op_class, ln.flops, ln.bytes) == ("norm", 5 * n, 2 * n * 4 + 2 * 4096 * 4)
    r = work("aten::sum", "[[64, 1000], [], [], []]", f'[{F}, "ScalarList", "Scalar", ""]')
    assert (r.op_class, r.flops, r.bytes) == ("reduction", 64000, 64000 * 4)


def test_embedding_and_its_backward() -> None:
    e = work(
        "aten::embedding",
        "[[50304, 768], [8, 1024], [], [], []]",
        f'[{F}, "long int", "Scalar", "Scalar", "Scalar"]',
        '["", "", "-1", "False", "False"]',
    )
    rows = 8 * 1024
    assert e.bytes == 2 * rows * 768 * 4 + rows * 8
    b = work(
        "aten::embedding_dense_backward",
        "[[1024, 768], [1024], [], [], []]",
        f'[{F}, "long int", "Scalar", "Scalar", "Scalar"]',
        '["", "", "1024", "-1", "False"]',
    )
    assert b.bytes == 1024 * 768 * 4 + 1024 * 8 + 1024 * 768 * 4


def test_cross_entropy_parts() -> None:
    ls = work("aten::_log_softmax", "[[8192, 50304], [], []]", f'[{F}, "Scalar", "Scalar"]')
    assert ls.bytes == 2 * 8192 * 50304 * 4
    nll = work(
        "aten::nll_loss_forward",
        "[[8192, 50304], [8192], [], [], []]",
        f'[{F}, "long int", "", "Scalar", "Scalar"]',
    )
    assert nll.bytes == 8192 * (4 + 8)  # one logit per target, and the targets
    bwd = work(
        "aten::nll_loss_backward",
        "[[], [8192, 50304], [8192], [], [], [], []]",
        f'[{F}, {F}, "long int", "", "Scalar", "Scalar", {F}]',
    )
    assert bwd.bytes == 8192 * (4 + 8)


def test_copies_move_bytes_and_do_no_flops() -> None:
    c = work("aten::copy_", "[[4096, 4096], [4096, 4096], []]", f'[{BF}, {F}, "Scalar"]')
    assert (c.op_class, c.flops, c.bytes) == ("copy", 0.0, 4096 * 4096 * (2 + 4))
    t = work("aten::_to_copy", "[[7, 1001], [], [], [], [], [], []]", '["long int"]')
    assert t.bytes == 2 * 7 * 1001 * 8
    # GPT-2 bf16 logits cast to fp32 (dtype code 6): 2-byte read, 4-byte write
    cast = work(
        "aten::_to_copy",
        "[[8, 1024, 50304], [], [], [], [], [], []]",
        f'[{BF}, "Scalar", "Scalar", "", "", "Scalar", ""]',
        '["", "6", "0", "", "", "False", ""]',
    )
    assert cast.bytes == 8 * 1024 * 50304 * (2 + 4)


def test_optimizers_without_shapes_say_so() -> None:
    fused = work("aten::_fused_adamw_", "[[], [], [], [], [], []]", json.dumps(["TensorList"] * 6))
    assert (fused.op_class, fused.flops, fused.note) == (
        "optimizer",
        None,
        "no shapes (TensorList inputs)",
    )
    fe = work("aten::_foreach_add_", "[[], []]", '["TensorList", "Scalar"]')
    assert (fe.op_class, fe.flops) == ("optimizer", None)
    per_tensor = work(
        "aten::addcmul_", "[[768, 768], [768, 768], [768, 768], []]", f'[{F}, {F}, {F}, "Scalar"]'
    )
    assert per_tensor.bytes == 4 * 768 * 768 * 4


def test_unknown_ops_and_missing_shapes_are_not_guessed() -> None:
    assert work("aten::view", "[[4096], []]", f'[{F}, "ScalarList"]').note == "no model for this op"
    w = work("aten::mm", "[[], []]", '["", ""]')
    assert (w.op_class, w.flops, w.bytes, w.note) == ("gemm", None, None, "no shapes")


def test_work_table_models_each_signature_once_with_or_without_ids() -> None:
    ops = pd.DataFrame(
        {
            "name": ["aten::mm", "aten::mm", "aten::view"],
            "input_dims": ["[[2, 3], [3, 4]]", "[[2, 3], [3, 4]]", "[[4], []]"],
            "input_types": [f"[{F}, {F}]", f"[{F}, {F}]", f'[{F}, "ScalarList"]'],
            "concrete_inputs": ['["", ""]', '["", ""]', '["", ""]'],
        },
        index=[10, 11, 12],
    )
    plain = work_table(ops)
    numbered = work_table(ops.assign(signature=[5, 5, 9]))
    pd.testing.assert_frame_equal(plain, numbered)
    assert plain["flops"].tolist()[:2] == [2 * 2 * 4 * 3] * 2
    assert plain["work_note"].tolist()[2] == "no model for this op"
    assert list(plain.index) == [10, 11, 12]
