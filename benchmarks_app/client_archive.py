"""The benchmark client as a source archive pip can install from this site, with no checkout.

The archive holds the client exactly as the server runs it (``bench_client/``: its pyproject,
README and package), so client and server share one submission schema and workload list.
"""

from __future__ import annotations

import functools
import gzip
import io
import tarfile
import tomllib
from pathlib import Path

CLIENT_DIR = Path(__file__).resolve().parents[1] / "bench_client"
_SKIPPED = ("__pycache__", ".egg-info", ".pyc")


def client_version() -> str:
    return tomllib.loads((CLIENT_DIR / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]


@functools.cache
def client_archive() -> bytes:
    """``gpuatlas-bench-<version>.tar.gz``: the same bytes for the same files (sorted, no dates)."""
    top = f"gpuatlas-bench-{client_version()}"
    files = [CLIENT_DIR / "pyproject.toml", CLIENT_DIR / "README.md"]
    files += sorted(
        path
        for path in (CLIENT_DIR / "gpuatlas_bench").rglob("*")
        if path.is_file() and not any(part.endswith(_SKIPPED) for part in path.relative_to(CLIENT_DIR).parts)
    )
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for path in files:
            data = path.read_bytes()
            info = tarfile.TarInfo(f"{top}/{path.relative_to(CLIENT_DIR).as_posix()}")
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            archive.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=0)
