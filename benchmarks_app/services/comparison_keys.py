"""Comparison keys: which results may be aggregated or drawn on one axis.

A comparison key names one workload configuration: same workload, same major.minor version,
precision, parameters and GPU count.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from benchmarks_app.services.canonical_json import canonical_json
from benchmarks_app.services.versions import version_major_minor


@dataclass(frozen=True)
class ComparisonKey:
    key: str
    label: str


def comparison_key_for(
    *, workload_slug: str, version: str, precision: str, params: dict[str, Any], gpu_count: int
) -> ComparisonKey:
    """The sha256 key and a readable label for one workload configuration.

    The key's JSON tells apart values Python calls equal: 1, 1.0 and true, or 0.0 and -0.0.
    """
    major_minor = version_major_minor(version)
    material = canonical_json(
        {
            "workload": workload_slug,
            "version": major_minor,
            "precision": precision,
            "params": params,
            "gpu_count": gpu_count,
        }
    )
    digest = hashlib.sha256(material.encode()).hexdigest()
    param_text = ", ".join(f"{k}={canonical_json(params[k]).strip(chr(34))}" for k in sorted(params))
    gpus = "1 GPU" if gpu_count == 1 else f"{gpu_count} GPUs"
    label = f"{workload_slug} v{major_minor} · {precision.upper()} · {gpus}"
    if param_text:
        label = f"{label} · {param_text}"
    return ComparisonKey(digest, label[:300])
