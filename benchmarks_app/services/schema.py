"""The submission JSON Schema, shared with the benchmark client, and validation against it.

The schema lives in the client package (``gpuatlas_bench/schemas/submission-1.schema.json``)
so that client and server can never disagree on it; when the package is not installed the
repository copy is read. Errors name the JSON path of the offending value.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Iterable
from importlib import resources
from pathlib import Path
from typing import Any

from benchmarks_app.services.errors import FieldError

SCHEMA_NAME = "submission-1.schema.json"
MAX_DEPTH = 16
REPO_SCHEMA = Path(__file__).resolve().parents[2] / "bench_client" / "gpuatlas_bench" / "schemas" / SCHEMA_NAME
MAX_ERRORS = 50
_REASON_LIMIT = 300


def schema_path() -> Path:
    try:
        candidate = resources.files("gpuatlas_bench").joinpath("schemas", SCHEMA_NAME)
        if candidate.is_file():
            return Path(str(candidate))
    except ModuleNotFoundError:
        pass
    return REPO_SCHEMA


@functools.cache
def submission_schema() -> dict[str, Any]:
    """The schema document (read once per process)."""
    return json.loads(schema_path().read_text(encoding="utf-8"))


def json_path(parts: Iterable[str | int]) -> str:
    """``['results', 0, 'median']`` -> ``$.results[0].median``."""
    text = "$"
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", part):
            text += f".{part}"
        else:
            text += f"[{json.dumps(part)}]"
    return text


_REQUIRED = re.compile(r'^"(?P<name>[^"]+)" is a required property')
_UNEXPECTED = re.compile(r"\('(?P<name>[^']+)' (?:was|were) unexpected")


def _error(parts: list[str | int], message: str) -> FieldError:
    # A missing or unexpected property is named by its own path, not by its parent's.
    for pattern in (_REQUIRED, _UNEXPECTED):
        found = pattern.search(message)
        if found:
            parts = [*parts, found.group("name")]
            break
    if len(message) > _REASON_LIMIT:
        # Shorten the quoted value in the middle: the verdict ("is too long", "does not match
        # ...") is at the end of jsonschema's messages.
        half = (_REASON_LIMIT - 1) // 2
        message = message[:half] + "…" + message[-half:]
    return FieldError(json_path(parts), message)


@functools.cache
def _validator() -> Callable[[Any], list[FieldError]]:
    schema = submission_schema()
    try:
        import jsonschema_rs
    except ImportError:  # the pure-Python validator gives the same paths, more slowly
        import jsonschema

        python_validator = jsonschema.Draft202012Validator(schema)

        def validate_python(document: Any) -> list[FieldError]:
            errors = sorted(python_validator.iter_errors(document), key=lambda e: list(e.absolute_path))
            return [_error(list(e.absolute_path), e.message) for e in errors[:MAX_ERRORS]]

        return validate_python

    rust_validator = jsonschema_rs.validator_for(schema)

    def validate_rust(document: Any) -> list[FieldError]:
        if rust_validator.is_valid(document):
            return []
        found = []
        for error in rust_validator.iter_errors(document):
            found.append(_error(list(error.instance_path), error.message))
            if len(found) >= MAX_ERRORS:
                break
        return found

    return validate_rust


def non_finite_numbers(document: Any) -> list[FieldError]:
    """Numbers JSON cannot carry but a parser may produce (``1e999`` reads as infinity)."""
    found: list[FieldError] = []
    stack: list[tuple[Any, list[str | int]]] = [(document, [])]
    while stack and len(found) < MAX_ERRORS:
        node, parts = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            found.append(FieldError(json_path(parts), "number out of range (not finite)"))
        elif isinstance(node, int) and not isinstance(node, bool) and abs(node) > 2**63:
            found.append(FieldError(json_path(parts), "integer out of range"))
        elif isinstance(node, dict):
            stack.extend((v, [*parts, k]) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, [*parts, i]) for i, v in enumerate(node))
    return found


def json_depth(document: Any) -> int:
    """Nesting depth of containers (a scalar is 0), computed without recursion."""
    deepest = 0
    stack = [(document, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            deepest = max(deepest, depth)
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            deepest = max(deepest, depth)
            stack.extend((v, depth + 1) for v in node)
    return deepest


def schema_errors(document: Any) -> list[FieldError]:
    """Everything wrong with ``document`` against the submission schema (at most 50 errors).

    ``document`` comes from payload.json_parse_strict, which refuses non-finite numbers.
    A document that fails and nests deeper than MAX_DEPTH gets that one error instead of the list.
    """
    errors = _validator()(document)
    if errors:
        depth = json_depth(document)
        if depth > MAX_DEPTH:
            return [FieldError("$", f"JSON nested {depth} levels deep; the limit is {MAX_DEPTH}")]
    return errors
