"""Benchmarks: run from the repo root as `python -m bench.<name>`; each prints a table and writes JSON.

BLAS is held to one thread so that a benchmark stays within one core on a shared machine; this runs
before any benchmark module imports NumPy.
"""

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
