"""Small helpers that several test modules share (fixtures live in conftest.py, model
factories in factories.py, whole data worlds in world.py)."""

from __future__ import annotations

import io
import re
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


_PLOTLY_REFERENCE = re.compile(r"%\{([a-z]+)(?:\[(\d+)\])?(?::([^}]*))?\}")


def hover_text(trace: dict[str, Any], index: int) -> str:
    """What Plotly shows on hover over point ``index`` of ``trace``: its template with each %{x},
    %{y} and %{customdata[k]} filled in (a d3 format read as Python's: d3's "~" trims the zeros
    Python's "g" trims anyway), line breaks as newlines, the <extra> box left out."""

    def filled(match: re.Match[str]) -> str:
        field, column, fmt = match.groups()
        value = trace[field][index] if column is None else trace[field][index][int(column)]
        return format(value, fmt.replace("~", "")) if fmt else str(value)

    text = _PLOTLY_REFERENCE.sub(filled, trace["hovertemplate"])
    return re.sub(r"<extra>.*?</extra>", "", text).replace("<br>", "\n")
