"""The submission schema (shared with the server) and the checks a JSON Schema cannot state.

The server loads the same file::

    from importlib import resources
    schema = json.loads(resources.files("gpuatlas_bench").joinpath("schemas/submission-1.schema.json").read_text())

or calls :func:`submission_validate`, which also runs the cross-field checks.
"""

from __future__ import annotations

import json
import math
from functools import cache
from importlib import resources
from typing import Any

SCHEMA_RESOURCE = "schemas/submission-1.schema.json"
EXAMPLE_RESOURCE = "examples/submission-example.json"
_MAX_ERRORS = 20


class SchemaUnavailable(RuntimeError):
    """jsonschema is not installed, so only the cross-field checks ran."""


@cache
def schema_load() -> dict[str, Any]:
    """The submission JSON Schema (draft 2020-12), version 1."""
    text = resources.files("gpuatlas_bench").joinpath(SCHEMA_RESOURCE).read_text(encoding="utf-8")
    return json.loads(text)


def example_load() -> dict[str, Any]:
    text = resources.files("gpuatlas_bench").joinpath(EXAMPLE_RESOURCE).read_text(encoding="utf-8")
    return json.loads(text)


def _path(parts: Any) -> str:
    joined = "/".join(str(part) for part in parts)
    return joined or "(top level)"


def _schema_errors(payload: Any) -> list[str]:
    try:
        import jsonschema
    except ImportError as missing:
        raise SchemaUnavailable("jsonschema is not installed: pip install 'gpuatlas-bench[validate]'") from missing
    validator = jsonschema.Draft202012Validator(schema_load(), format_checker=jsonschema.FormatChecker())
    errors = sorted(validator.iter_errors(payload), key=lambda error: (list(error.absolute_path), error.message))
    messages = []
    for error in errors:
        # For oneOf/anyOf failures the most specific sub-error names the real problem.
        best = jsonschema.exceptions.best_match([error]) if error.context else error
        messages.append(f"{_path(best.absolute_path)}: {best.message[:300]}")
    return messages


def _cross_field_errors(payload: dict[str, Any]) -> list[str]:
    errors = []
    seen: dict[str, int] = {}
    for position, result in enumerate(payload.get("results") or []):
        if not isinstance(result, dict):
            continue
        where = f"results/{position}"
        low, middle, high = result.get("min"), result.get("median"), result.get("max")
        numbers = all(isinstance(value, int | float) and math.isfinite(value) for value in (low, middle, high))
        if numbers and not low <= middle <= high:
            errors.append(f"{where}: min <= median <= max does not hold ({low}, {middle}, {high})")
        repetitions = result.get("repetitions")
        window_start = (result.get("stats") or {}).get("window_start")
        if numbers and isinstance(repetitions, list) and isinstance(window_start, int):
            window = repetitions[window_start:]
            if not window:
                errors.append(f"{where}/stats/window_start: {window_start} leaves no repetitions")
            elif all(isinstance(value, int | float) for value in window) and (
                min(window) < low * (1 - 1e-9) or max(window) > high * (1 + 1e-9)
            ):
                errors.append(f"{where}: a repetition of the statistics window lies outside [min, max]")
        errors += _per_gpu_errors(result, where, payload.get("host"))
        key = json.dumps(
            [result.get(name) for name in ("workload", "workload_version", "precision", "params", "gpu_count", "mode")],
            sort_keys=True,
        )
        if key in seen:
            errors.append(f"{where}: the same workload, precision, params and mode as results/{seen[key]}")
        else:
            seen[key] = position
    return errors


def _per_gpu_errors(result: dict[str, Any], where: str, host: Any) -> list[str]:
    """A multi-GPU result: one per_gpu entry per rank 0..gpu_count-1, and no more GPUs than the host ran."""
    count, per_gpu = result.get("gpu_count"), result.get("per_gpu")
    if not isinstance(count, int) or not isinstance(per_gpu, list):
        return []
    errors = []
    ranks = sorted(
        entry.get("rank") for entry in per_gpu if isinstance(entry, dict) and isinstance(entry.get("rank"), int)
    )
    if ranks != list(range(count)):
        errors.append(f"{where}/per_gpu: needs one entry for each rank 0 to {count - 1}, has ranks {ranks}")
    for position, entry in enumerate(per_gpu):
        if not isinstance(entry, dict):
            continue
        low, middle, high = entry.get("min"), entry.get("median"), entry.get("max")
        if all(isinstance(value, int | float) for value in (low, middle, high)) and not low <= middle <= high:
            errors.append(f"{where}/per_gpu/{position}: min <= median <= max does not hold ({low}, {middle}, {high})")
    ranks_run = host.get("ranks") if isinstance(host, dict) else None
    if isinstance(ranks_run, int) and count > ranks_run:
        errors.append(f"{where}/gpu_count: {count} GPUs, but host.ranks says the run used at most {ranks_run}")
    return errors


def submission_validate(payload: Any, *, require_schema: bool = False) -> list[str]:
    """Every problem with ``payload`` as 'path: reason' lines; empty when it is a valid submission.

    Without jsonschema installed only the cross-field checks run, unless ``require_schema`` is set,
    in which case :class:`SchemaUnavailable` is raised.
    """
    try:
        errors = _schema_errors(payload)
    except SchemaUnavailable:
        if require_schema:
            raise
        errors = [] if isinstance(payload, dict) else ["(top level): a submission is a JSON object"]
    if isinstance(payload, dict):
        errors += _cross_field_errors(payload)
    return errors[:_MAX_ERRORS]
