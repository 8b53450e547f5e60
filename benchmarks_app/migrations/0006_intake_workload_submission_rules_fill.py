"""Fill Workload.submission_rules of existing rows from the client's workloads.json.

Without it, an upgraded site would refuse every submission until someone ran seed_workloads:
a workload without rules is not accepted from submissions. Rows the file does not describe
(the Lambda lab workloads, older versions) keep none. seed_workloads does the same, and more.
"""

from __future__ import annotations

import json
from typing import Any

from django.db import migrations

from benchmarks_app.services.workloads import client_workloads_path

RULE_KEYS = ("precisions", "results_per_run", "max_gpu_count", "params")


def _major_minor(version: str) -> str:
    parts = str(version).split(".")
    return f"{int(parts[0])}.{int(parts[1]) if len(parts) > 1 else 0}"


def fill(apps: Any, schema_editor: Any) -> None:
    Workload = apps.get_model("benchmarks_app", "Workload")  # noqa: N806 - a model class
    path = client_workloads_path()
    if path is None:
        return
    for entry in json.loads(path.read_text(encoding="utf-8")).get("workloads", []):
        if not all(key in entry for key in ("precisions", "results_per_run", "params")):
            continue
        rules = {key: entry[key] for key in RULE_KEYS if key in entry}
        Workload.objects.filter(
            slug=entry["id"], version=_major_minor(entry["version"]), submission_rules__isnull=True
        ).update(submission_rules=rules)


class Migration(migrations.Migration):
    dependencies = [("benchmarks_app", "0005_intake_workload_submission_rules")]

    operations = [migrations.RunPython(fill, migrations.RunPython.noop)]
