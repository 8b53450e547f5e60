"""JSON bodies with bounded nesting: checked before parsing, so that a deeply nested body is a
400 naming the limit, never a RecursionError (a 500) inside the parser.

The size is bounded before this by DATA_UPLOAD_MAX_MEMORY_SIZE and
gpuatlas.request_limits.RequestBodyLimitMiddleware (413).
"""

from __future__ import annotations

import io
import re
from typing import Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

# No body this API takes nests deeper than a few levels; a submission has its own parser
# (benchmarks_app.services.payload) with its own limit.
MAX_JSON_DEPTH = 32

# A JSON string (escapes included), so that brackets inside strings are not counted.
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(rb"[\[\]{}]")


def json_depth_exceeds(body: bytes, *, limit: int) -> bool:
    """Whether the brackets of ``body`` (outside strings) nest deeper than ``limit``."""
    depth = 0
    for match in _BRACKET.finditer(_STRING.sub(b'""', body)):
        if match.group() in (b"[", b"{"):
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


class BoundedJSONParser(JSONParser):
    """DRF's JSON parser, refusing bodies nested deeper than MAX_JSON_DEPTH before parsing."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        body = stream.read(settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1) if stream is not None else b""
        if json_depth_exceeds(body, limit=MAX_JSON_DEPTH):
            raise ParseError(f"JSON parse error - nested deeper than {MAX_JSON_DEPTH} levels.")
        try:
            return super().parse(io.BytesIO(body), media_type, parser_context)
        except RecursionError:  # not reached below the limit; a 400 all the same
            raise ParseError(f"JSON parse error - nested deeper than {MAX_JSON_DEPTH} levels.") from None
