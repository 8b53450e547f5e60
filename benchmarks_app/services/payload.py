"""Strict reading of a submission body: size, UTF-8, standard JSON only, bounded nesting.

Python's json module accepts ``NaN`` and ``Infinity`` and silently keeps the last of
duplicated keys; a benchmark result must be neither, so both are refused here.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any

from django.conf import settings

from benchmarks_app.services.errors import FieldError, SubmissionInvalid, SubmissionTooLarge
from benchmarks_app.services.schema import MAX_DEPTH, json_path, non_finite_numbers


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON: send numbers as finite decimals")


def _refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicated key {key!r}")
        result[key] = value
    return result


def body_decode(body: bytes | str) -> str:
    """The body as text; refuses oversized and non-UTF-8 bodies."""
    size = len(body.encode("utf-8")) if isinstance(body, str) else len(body)
    limit = settings.SUBMISSION_MAX_BYTES
    if size > limit:
        raise SubmissionTooLarge([FieldError("$", f"the payload is {size} bytes; the limit is {limit} bytes")])
    if isinstance(body, str):
        return body
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SubmissionInvalid([FieldError("$", f"the body is not UTF-8 (byte {exc.start})")]) from None


def json_parse_strict(text: str) -> Any:
    """Parse standard JSON; NaN/Infinity, numbers that overflow and duplicated keys are errors.

    Nesting deeper than Python's parser allows is refused here; ``schema_errors`` gives the
    clearer message for moderately deep documents that fail the schema.
    """
    if not text.strip():
        raise SubmissionInvalid([FieldError("$", "the body is empty: send the JSON document the client wrote")])
    out_of_range = False

    # The hooks only note that some number overflows; the walk below then names where.
    def parse_float(token: str) -> float:
        nonlocal out_of_range
        value = float(token)
        if not math.isfinite(value):
            out_of_range = True
        return value

    def parse_int(token: str) -> int:
        nonlocal out_of_range
        value = int(token)
        if abs(value) > 2**63:
            out_of_range = True
        return value

    try:
        document = json.loads(
            text,
            parse_constant=_refuse_constant,
            object_pairs_hook=_refuse_duplicates,
            parse_float=parse_float,
            parse_int=parse_int,
        )
    except json.JSONDecodeError as exc:
        raise SubmissionInvalid(
            [FieldError("$", f"malformed JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})")]
        ) from None
    except ValueError as exc:
        raise SubmissionInvalid([FieldError("$", f"malformed JSON: {exc}")]) from None
    except RecursionError:
        raise SubmissionInvalid(
            [FieldError("$", f"JSON nested too deeply (the limit is {MAX_DEPTH} levels)")]
        ) from None
    if out_of_range:
        errors = non_finite_numbers(document)
        if errors:
            raise SubmissionInvalid(errors)
    if _MAYBE_UNSTORABLE.search(text):
        unstorable = unstorable_strings(document)
        if unstorable:
            raise SubmissionInvalid(unstorable)
    return document


# "\u0000" and unpaired surrogate escapes parse into strings PostgreSQL cannot store (no NUL in
# text; a lone surrogate cannot be encoded as UTF-8): refuse them here, not with a 500 on insert.
# A surrogate pair decodes to one character and passes.
_MAYBE_UNSTORABLE = re.compile(r"\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})")
_UNSTORABLE_CHARACTER = re.compile("[\x00\ud800-\udfff]")


def unstorable_strings(document: Any) -> list[FieldError]:
    """Keys and strings holding NUL or an unpaired surrogate, by JSON path."""
    found: list[FieldError] = []
    stack: list[tuple[Any, list[str | int]]] = [(document, [])]
    while stack and len(found) < 50:
        node, parts = stack.pop()
        if isinstance(node, str) and _UNSTORABLE_CHARACTER.search(node):
            found.append(FieldError(json_path(parts), "the string holds a NUL character or an unpaired surrogate"))
        elif isinstance(node, dict):
            for key, value in node.items():
                if _UNSTORABLE_CHARACTER.search(key):
                    found.append(FieldError(json_path(parts), "a key holds a NUL character or an unpaired surrogate"))
                else:
                    stack.append((value, [*parts, key]))
        elif isinstance(node, list):
            stack.extend((v, [*parts, i]) for i, v in enumerate(node))
    return found


def payload_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
