"""The track record of each recommendation on the H200 validation pairs
(analysis/rules/track_record.py). Written by `python3 tools/track_record.py` from the rules'
results on tests/data/validation_h200: not edited by hand."""

from analysis.rules.track_record import Record

TRACK_RECORD = {
    "channels-last": Record(
        pairs=10,
        within=7,
        held_out=6,
        held_out_within=4,
        median_error_pct=38,
    ),
    "cuda-graphs": Record(
        pairs=22,
        within=21,
        held_out=21,
        held_out_within=20,
        median_error_pct=6,
    ),
    "decode-batching": Record(
        pairs=1,
        within=1,
        held_out=1,
        held_out_within=1,
        median_error_pct=1,
    ),
    "fused-attention": Record(
        pairs=7,
        within=3,
        held_out=3,
        held_out_within=2,
        median_error_pct=40,
    ),
    "fused-optimizer": Record(
        pairs=10,
        within=6,
        held_out=6,
        held_out_within=4,
        median_error_pct=33,
    ),
    "gpu-starvation": Record(
        pairs=8,
        within=6,
        held_out=7,
        held_out_within=5,
        median_error_pct=27,
    ),
    "host-sync": Record(
        pairs=5,
        within=5,
        held_out=4,
        held_out_within=4,
        median_error_pct=43,
    ),
    "kernel-fusion": Record(
        pairs=18,
        within=4,
        held_out=5,
        held_out_within=1,
        median_error_pct=57,
    ),
    "memory-headroom": Record(
        pairs=34,
        within=20,
        held_out=19,
        held_out_within=11,
        median_error_pct=29,
    ),
    "mixed-precision": Record(
        pairs=7,
        within=6,
        held_out=5,
        held_out_within=4,
        median_error_pct=17,
    ),
    "pageable-memcpy": Record(
        pairs=3,
        within=1,
        held_out=2,
        held_out_within=1,
        median_error_pct=39,
    ),
    "small-batch": Record(
        pairs=37,
        within=31,
        held_out=36,
        held_out_within=30,
        median_error_pct=11,
    ),
    "tensor-core-alignment": Record(
        pairs=2,
        within=0,
        held_out=2,
        held_out_within=0,
        median_error_pct=71,
    ),
    "tf32": Record(
        pairs=3,
        within=3,
        held_out=2,
        held_out_within=2,
        median_error_pct=6,
    ),
}
