"""torch.profiler straight into the dashboard: two lines in a training or inference script.

    from collectors.torch_profiler import profile_to_dashboard
    with profile_to_dashboard(run="gpt2-bf16", schedule=...) as prof:
        for batch in loader:
            train_step(batch)
            prof.step()

Each profiling cycle of the schedule becomes one run named `run`, tagged `cycle=<k>` and
`session=<id>` (docs/decisions.md D7 says why a cycle is a run); each cycle's trace carries
the median time of the steps the profiler did not record. With `ingest=False` only the trace
files are written, and neither duckdb nor msgspec needs to be installed.

The package: dashboard_profile (the profile and the context manager), handler (each cycle's
trace written and ingested off the training thread), unprofiled (the timing of the steps
not recorded) and session (store and trace folders, rank, session id, run tags).
"""

from collectors.torch_profiler.dashboard_profile import profile_to_dashboard
from collectors.torch_profiler.handler import DashboardTraceHandler
from collectors.torch_profiler.unprofiled import UNPROFILED_KEY

__all__ = ["UNPROFILED_KEY", "DashboardTraceHandler", "profile_to_dashboard"]
