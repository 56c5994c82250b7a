"""Everything that produces data: trace ingest (and, later, NVML and profiler agents)."""
