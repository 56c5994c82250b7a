"""Record before/after pairs of real-framework workloads, timed without the profiler.

The command line of the package tools/validation, whose docstring says what each pair
records and how. On the GPU machine, from the repository root:

    PYTHONUNBUFFERED=1 python3 tools/record_validation_pairs.py OUT --tar $OUT/validation.tar \
        --budget-s 500

and here, tiny CPU versions of every workload whose libraries import:

    python3 tools/record_validation_pairs.py --smoke /tmp/smoke --tar /tmp/smoke.tar
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tools.validation.cli import main

if __name__ == "__main__":
    sys.exit(main())
