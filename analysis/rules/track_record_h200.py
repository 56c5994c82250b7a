"""The track record of each recommendation on the H200 validation pairs
(analysis/rules/track_record.py). Written by `python3 tools/track_record.py` from the rules'
results on tests/data/validation_h200: not edited by hand."""

from analysis.rules.track_record import Record

TRACK_RECORD = {
    "channels-last": Record(
        pairs=5,
        within=3,
        held_out=3,
        held_out_within=1,
        median_error_pct=50,
    ),
    "cuda-graphs": Record(
        pairs=11,
        within=10,
        held_out=10,
        held_out_within=9,
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
        pairs=6,
        within=2,
        held_out=2,
        held_out_within=1,
        median_error_pct=49,
    ),
    "fused-optimizer": Record(
        pairs=7,
        within=4,
        held_out=3,
        held_out_within=2,
        median_error_pct=35,
    ),
    "gpu-starvation": Record(
        pairs=5,
        within=4,
        held_out=4,
        held_out_within=3,
        median_error_pct=10,
    ),
    "host-sync": Record(
        pairs=2,
        within=1,
        held_out=2,
        held_out_within=1,
        median_error_pct=88,
    ),
    "kernel-fusion": Record(
        pairs=11,
        within=3,
        held_out=10,
        held_out_within=2,
        median_error_pct=49,
    ),
    "memory-headroom": Record(
        pairs=15,
        within=7,
        held_out=10,
        held_out_within=5,
        median_error_pct=39,
    ),
    "mixed-precision": Record(
        pairs=5,
        within=4,
        held_out=3,
        held_out_within=2,
        median_error_pct=17,
    ),
    "pageable-memcpy": Record(
        pairs=2,
        within=0,
        held_out=1,
        held_out_within=0,
        median_error_pct=41,
    ),
    "small-batch": Record(
        pairs=17,
        within=15,
        held_out=16,
        held_out_within=14,
        median_error_pct=10,
    ),
    "tensor-core-alignment": Record(
        pairs=2,
        within=0,
        held_out=2,
        held_out_within=0,
        median_error_pct=71,
    ),
    "tf32": Record(
        pairs=2,
        within=2,
        held_out=1,
        held_out_within=1,
        median_error_pct=7,
    ),
}
