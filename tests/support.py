"""Small helpers that several test modules share (fixtures live in conftest.py, model
factories in factories.py, whole data worlds in world.py)."""

from __future__ import annotations

import io
from typing import Any

from django.core.management import call_command

from dashboard.selectors.ranking_params import RankingParams
from dashboard.selectors.ranking_rows import RankingRow
from dashboard.selectors.rankings import rankings_compute


def ranking_by_slug(params: RankingParams) -> dict[str, RankingRow]:
    """The ranking for ``params``, each row under its GPU's slug."""
    return {row.gpu_slug: row for row in rankings_compute(params=params).rows}


def command_output(name: str, *args: str, stdin: str = "", **options: Any) -> str:
    """What the management command ``name`` writes to stdout, fed ``stdin``."""
    out = io.StringIO()
    call_command(name, *args, stdin=io.StringIO(stdin), stdout=out, **options)
    return out.getvalue()
