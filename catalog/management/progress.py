"""A tqdm progress bar for management commands, silent when output is not a terminal."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

from tqdm import tqdm


def tqdm_progress(items: Iterable[Any], total: int, label: str) -> Iterable[Any]:
    return tqdm(items, total=total, desc=label, unit="row", disable=not sys.stderr.isatty(), leave=False)
