"""Work models of attention ops (flash, efficient, cuDNN and the scaled_dot_product_attention
front): B·H_q·N_q·N_kv·(2·d_qk + 2·d_v) FLOPs, halved when causal; backward 2.5× the forward."""

from __future__ import annotations

from analysis.work.args import Model, NoShapes, OpArgs, Result, numel

# Position of is_causal in Concrete Inputs, per op (torch 2.x signatures).
CAUSAL_AT = {
    "aten::scaled_dot_product_attention": 5,
    "aten::_scaled_dot_product_flash_attention": 4,
    "aten::_scaled_dot_product_efficient_attention": 6,
    "aten::_scaled_dot_product_cudnn_attention": 6,
    "aten::_cudnn_attention_forward": 10,
    "aten::_flash_attention_forward": 8,
    "aten::_efficient_attention_forward": 8,
    "aten::_scaled_dot_product_flash_attention_backward": 11,
    "aten::_scaled_dot_product_efficient_attention_backward": 11,
    "aten::_scaled_dot_product_cudnn_attention_backward": 14,
    "aten::_cudnn_attention_backward": 14,
}
ATTENTION_BWD = {
    "aten::_scaled_dot_product_flash_attention_backward",
    "aten::_scaled_dot_product_efficient_attention_backward",
    "aten::_scaled_dot_product_cudnn_attention_backward",
    "aten::_cudnn_attention_backward",
    "aten::_flash_attention_backward",
    "aten::_efficient_attention_backward",
}


def attention(name: str) -> Model:
    backward = name in ATTENTION_BWD
    q_at = 1 if backward else 0  # backward ops start with grad_out

    def model(a: OpArgs) -> Result:
        q, k, v = a.shape(q_at), a.shape(q_at + 1), a.shape(q_at + 2)
        if len(q) != 4 or len(k) != 4 or len(v) != 4:
            raise NoShapes
        b, h, nq, dqk = q
        nkv, dv = k[2], v[3]
        flops = 2.0 * b * h * nq * nkv * (dqk + dv)
        causal = a.flag(CAUSAL_AT[name]) if name in CAUSAL_AT else None
        note = "" if causal is not None else "is_causal not recorded: counted as not causal"
        if causal:
            flops /= 2
        bpe = a.bpe(q_at)
        qkv = (numel(q) + numel(k) + numel(v)) * bpe
        o = b * h * nq * dv * bpe
        if backward:  # read q, k, v, o, do; write dq, dk, dv
            return 2.5 * flops, 2 * qkv + 2 * o, note
        return flops, qkv + o, note

    return model
