"""python manage.py dump_open_data: CSV and JSON of the public tables with a README."""

from __future__ import annotations

import csv
import json

import pytest
from django.core.management import CommandError, call_command

from dashboard.open_data import TABLES
from tests.factories import BenchmarkResultFactory
from tests.world import DASHBOARD_WORLD, world_build

pytestmark = pytest.mark.django_db


def test_dump_writes_every_table_as_csv_and_json(tmp_path):
    world = world_build(rows=DASHBOARD_WORLD)
    BenchmarkResultFactory(gpu=world.gpus["h100"], trust="flagged", value=999.0)
    out = tmp_path / "open"
    call_command("dump_open_data", str(out))
    for name, table in TABLES.items():
        with open(out / f"{name}.csv", newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        records = json.loads((out / f"{name}.json").read_text(encoding="utf-8"))
        assert len(rows) == len(records), name
        assert list(rows[0]) == table.header, name
    gpus = {r["slug"]: r for r in json.loads((out / "gpus.json").read_text())}
    assert gpus["a100-sxm4-80-gb"]["dense_bf16_tflops"] == 300.0
    assert gpus["hostile-card"]["name"].startswith("<script>")  # data, not markup: kept verbatim
    results = json.loads((out / "results.json").read_text())
    assert 999.0 not in {r["value"] for r in results}  # flagged results are not published
    assert len(json.loads((out / "price_history.json").read_text())) == 21
    readme = (out / "README.md").read_text()
    for table in TABLES.values():
        assert f"## {table.name}" in readme
        assert all(f"| {column} |" in readme for column in table.header)
    assert not list(out.glob("*.tmp"))


def test_dump_is_repeatable_and_refuses_a_file_as_directory(tmp_path):
    world_build(rows=DASHBOARD_WORLD, price_days=())
    call_command("dump_open_data", str(tmp_path))
    first = (tmp_path / "offers.csv").read_text()
    call_command("dump_open_data", str(tmp_path))
    assert (tmp_path / "offers.csv").read_text() == first
    target = tmp_path / "file.txt"
    target.write_text("x")
    with pytest.raises(CommandError, match="not a directory"):
        call_command("dump_open_data", str(target))
