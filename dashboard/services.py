"""Writes of the dashboard: the open-data dump, the rankings' stored submitter counts."""

from __future__ import annotations

import csv
import datetime as dt
import json
import os
import tempfile
from decimal import Decimal
from pathlib import Path
from typing import Any

from benchmarks_app.services.scope_submitters import scope_submitters_refresh
from dashboard.open_data import TABLES, open_data_readme
from dashboard.selectors.rankings import ranking_submitter_scopes


def _json_value(value: Any) -> Any:
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    return value


def open_data_dump(*, directory: Path) -> dict[str, int]:
    """Write every open table as CSV and JSON plus README.md into ``directory``.

    Each file is written to a temporary name and renamed, so a failed dump never leaves a
    half-written file behind a good name. Returns rows written per table.
    """
    directory.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    for table in TABLES.values():
        tmp_names: list[str] = []
        try:
            with (
                tempfile.NamedTemporaryFile(
                    "w", newline="", encoding="utf-8", dir=directory, delete=False, suffix=".tmp"
                ) as csv_tmp,
                tempfile.NamedTemporaryFile(
                    "w", encoding="utf-8", dir=directory, delete=False, suffix=".tmp"
                ) as json_tmp,
            ):
                tmp_names = [csv_tmp.name, json_tmp.name]
                writer = csv.writer(csv_tmp)
                writer.writerow(table.header)
                json_tmp.write("[")
                count = 0
                for row in table.rows():
                    writer.writerow(["" if v is None else v for v in row])
                    record = {name: _json_value(value) for name, value in zip(table.header, row, strict=True)}
                    json_tmp.write(("," if count else "") + "\n" + json.dumps(record, ensure_ascii=False))
                    count += 1
                json_tmp.write("\n]\n")
            os.replace(tmp_names[0], directory / f"{table.name}.csv")
            os.replace(tmp_names[1], directory / f"{table.name}.json")
        finally:
            for leftover in tmp_names:
                if os.path.exists(leftover):
                    os.unlink(leftover)
        counts[table.name] = count
    (directory / "README.md").write_text(open_data_readme(), encoding="utf-8")
    return counts


def ranking_submitters_refresh() -> int:
    """Store each GPU's distinct submitters in every scope the rankings count them over, for the
    GPUs whose results changed since (benchmarks_app.services.scope_submitters). Returns the
    counts written."""
    return scope_submitters_refresh(scopes=ranking_submitter_scopes())
