"""Workload versions: what is measured changes with major.minor, not with a patch."""

from __future__ import annotations


def version_major_minor(version: str) -> str:
    """``1.2.3`` -> ``1.2``; ``2`` -> ``2.0``: patch versions do not change what is measured."""
    text = version if isinstance(version, str) else str(version)
    parts = [p for p in text.strip().lstrip("vV").split(".") if p != ""]
    if not parts:
        raise ValueError(f"empty version {version!r}")
    for part in parts[:2]:
        if not part.isdigit():
            raise ValueError(f"version {version!r} is not numeric major.minor")
    major = str(int(parts[0]))
    minor = str(int(parts[1])) if len(parts) > 1 else "0"
    return f"{major}.{minor}"
