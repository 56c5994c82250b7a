"""Record before/after pairs of real-framework workloads, timed without the profiler.

The recommendations rank fixes by estimated time saved. To check those estimates, each pair
runs one workload twice with exactly one change (the "before" plants a recommendation, the
"after" is the tuned reference, in which it must not appear). Every run is timed unprofiled
(N steps, CUDA events at the step boundaries, no synchronize inside the loop), then profiled
with the dashboard's hook (ingest=False: the GPU machine has neither duckdb nor msgspec), whose
trace also carries the hook's own unprofiled measurement ("dashboardUnprofiledSteps").

On the GPU machine (one H200, no network: every model is built from a config with random
weights), from the repository root:

    PYTHONUNBUFFERED=1 python3 tools/record_validation_pairs.py OUT --tar $OUT/validation.tar \
        --budget-s 500

The repository's working tree is larger than the 64 MiB a call to the GPU machine takes, mostly
tests/data/validation_h200: move that folder out of the checkout for the call and back after
(without it the tree is about 60 MB, 50 of them tests/data/validation_h100, the H100's runs).

Writes OUT/summary.json after every workload (ids, roles, planted recommendation, timings,
per-step times, units per step, trace path, versions, errors) and OUT/traces/, then packs both
into the --tar file and, when they do not fit in one, NAME-2.tar, NAME-3.tar… (uncompressed,
at most 16 MiB each; a trace larger than that is listed in the summary's `tar_left_out`).
`--list` prints the workloads, `--only ID[,ID]` runs some (a pair id selects its runs),
`--budget-s` stops starting workloads once that many seconds have passed.

`--interleave SUFFIX` records each selected pair as PAIR-SUFFIX with both runs built in one
process and their unprofiled timing interleaved in rounds (interleave.py: the saving is the
median of the rounds' paired differences); each run is still profiled alone. `--interleave`
alone keeps the pairs' own names (the ninth to sixteenth recordings', fresh_pairs.py). Not for
the pairs whose after run replays a CUDA graph: their first interleaved round hits a
device-side assert that breaks the process's CUDA context (D80); record those one run after
the other, renamed PAIR-SUFFIX by `--suffix SUFFIX` where they join a session (D105).

`--smoke` runs tiny CPU versions of every workload whose libraries import here (the others
are skipped with the reason), so the control flow, the timing, the profiling with the hook
and the summary are exercised without a GPU.

The package: workload (the shared types), timing (unprofiled timing and the hook's profile),
training (the training step), one module per workload family (language_models, vision,
launch_bound, decode, lightning_train), changes (what a pair is made of), pair_sets (a model's
standard pairs, by kind, and rival fixes made to their before workloads), pairs (the table of
pairs; fresh_pairs, the ninth to sixteenth recordings', whose ids fresh_ids and rivals keep
without torch), rivals (the rival recordings' sessions), halves (which half, tune or held-out,
each pair is in), runner (a workload's record, the summary, the tars), interleave (a pair
recorded in one process) and cli (the command line).
"""
