"""Tests of the standalone benchmark client: CPU-only, no database, no Django imports of our own.

``gpuatlas_bench`` is installed editable by ``make venv``; when it is not, it is imported from the
source tree so the tests still run.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

BENCH_CLIENT_DIR = Path(__file__).resolve().parents[2] / "bench_client"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "bench"

try:
    import gpuatlas_bench  # noqa: F401
except ImportError:  # pragma: no cover - depends on how the venv was made
    sys.path.insert(0, str(BENCH_CLIENT_DIR))


@pytest.fixture
def h100_run_path() -> Path:
    """A real gpuatlas-bench result from an H100 SXM (see bench_client/perf/results/)."""
    return FIXTURES / "h100_run.json"


@pytest.fixture
def client_env() -> dict[str, str]:
    """Environment for running ``python -m gpuatlas_bench`` in a subprocess."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(BENCH_CLIENT_DIR), env.get("PYTHONPATH", "")]))
    return env
