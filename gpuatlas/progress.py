"""The progress callback that long imports and rebuilds report through.

A service takes ``progress=`` and wraps each long loop in it: ``for row in progress(rows, total,
label)``. The management commands pass a tqdm bar (``catalog.management.progress``); every other
caller (tasks, tests, the demo loader) gets :func:`no_progress`, which reports nothing. It lives in
the core so that services of every app share one signature without importing each other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

#: ``progress(items, total, label)`` returns the items, reporting as they are consumed.
Progress = Callable[[Iterable[Any], int, str], Iterable[Any]]


def no_progress(items: Iterable[Any], total: int, label: str) -> Iterable[Any]:
    """Report nothing: the items as they are."""
    return items
