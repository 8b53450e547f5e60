"""Writes of the dashboard: the open-data dump, the rankings' stored submitter counts, the GPU
pages' stored standings."""

from __future__ import annotations

import csv
import datetime as dt
import json
import os
import pickle
import tempfile
from decimal import Decimal
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone

from benchmarks_app.services.scope_submitters import scope_submitters_refresh
from catalog.models import Gpu
from dashboard.models import StoredStanding
from dashboard.open_data import TABLES, open_data_readme
from dashboard.selectors.rankings import ranking_submitter_scopes
from dashboard.selectors.standings import STORED_CURRENCY, gpu_standings_compute
from gpuatlas.data_version import data_version


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


def stored_standings_refresh(*, when_stale: bool = False) -> int:
    """Store every GPU's graded standing in every use case at the default parameters in USD
    (``StoredStanding``), tagged with the data version and day they are computed at. The version
    is read before the computation: a bump meanwhile leaves them tagged stale, never current
    with older data. ``when_stale``: only when some are of another version or day, or none are
    stored (the warm-up's check, for when the day has turned). Returns the rows written."""
    version, day = data_version(), timezone.now().date()
    stored = StoredStanding.objects.all()
    if when_stale and stored.exists() and not stored.exclude(data_version=version, day=day).exists():
        return 0
    gpus = list(Gpu.objects.only("id").order_by("id"))
    standings = gpu_standings_compute(gpus=gpus, currency=STORED_CURRENCY, graded=True)
    rows = [
        StoredStanding(
            use_case=slug,
            gpu_id=gpu.id,
            data_version=version,
            day=day,
            baseline_name=in_use_case.baseline_name,
            row=pickle.dumps(row) if (row := in_use_case.rows.get(gpu.id)) is not None else None,
        )
        for slug, in_use_case in standings.items()
        for gpu in gpus
    ]
    # Replaced in place, not deleted and inserted again: two refreshes at once (the warm-up's and
    # the bump's, on two workers) would otherwise both insert after both deleted, and the second
    # fail on the first's rows. The later one waits for the earlier one's rows and overwrites
    # them (rows in one order in both, so neither waits on the other).
    with transaction.atomic():
        StoredStanding.objects.bulk_create(
            rows,
            batch_size=500,
            update_conflicts=True,
            unique_fields=["use_case", "gpu"],
            update_fields=["data_version", "day", "baseline_name", "row"],
        )
        StoredStanding.objects.exclude(use_case__in=list(standings)).delete()  # use cases no longer defined
    return len(rows)
