"""One text per JSON value: keys sorted, no spaces, Unicode kept, for keys and for grouping equal values."""

from __future__ import annotations

import json
from typing import Any


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
