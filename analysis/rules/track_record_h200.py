"""The track record of each recommendation on the H200 validation pairs
(analysis/rules/track_record.py). Written by `python3 tools/track_record.py` from the rules'
results on tests/data/validation_h200: not edited by hand."""

from analysis.rules.track_record import Record

TRACK_RECORD = {
    "channels-last": Record(
        pairs=3,
        within=2,
        held_out=1,
        held_out_within=0,
        median_error_pct=53,
    ),
    "cuda-graphs": Record(
        pairs=7,
        within=6,
        held_out=6,
        held_out_within=5,
        median_error_pct=4,
    ),
    "decode-batching": Record(
        pairs=1,
        within=1,
        held_out=1,
        held_out_within=1,
        median_error_pct=1,
    ),
    "fused-attention": Record(
        pairs=5,
        within=2,
        held_out=1,
        held_out_within=1,
        median_error_pct=40,
    ),
    "fused-optimizer": Record(
        pairs=5,
        within=3,
        held_out=1,
        held_out_within=1,
        median_error_pct=35,
    ),
    "gpu-starvation": Record(
        pairs=3,
        within=3,
        held_out=2,
        held_out_within=2,
        median_error_pct=10,
    ),
    "host-sync": Record(
        pairs=1,
        within=1,
        held_out=1,
        held_out_within=1,
        median_error_pct=14,
    ),
    "kernel-fusion": Record(
        pairs=8,
        within=3,
        held_out=7,
        held_out_within=2,
        median_error_pct=52,
    ),
    "memory-headroom": Record(
        pairs=12,
        within=6,
        held_out=7,
        held_out_within=4,
        median_error_pct=33,
    ),
    "mixed-precision": Record(
        pairs=3,
        within=3,
        held_out=1,
        held_out_within=1,
        median_error_pct=17,
    ),
    "pageable-memcpy": Record(
        pairs=1,
        within=0,
        held_out=0,
        held_out_within=0,
        median_error_pct=42,
    ),
    "small-batch": Record(
        pairs=11,
        within=10,
        held_out=10,
        held_out_within=9,
        median_error_pct=13,
    ),
    "tensor-core-alignment": Record(
        pairs=1,
        within=0,
        held_out=1,
        held_out_within=0,
        median_error_pct=43,
    ),
    "tf32": Record(
        pairs=1,
        within=1,
        held_out=0,
        held_out_within=0,
        median_error_pct=6,
    ),
}
