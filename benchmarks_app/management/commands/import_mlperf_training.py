"""python manage.py import_mlperf_training"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from benchmarks_app.services.lab_tables import LabTableError
from benchmarks_app.services.mlperf_training_import import BUNDLED_DIR, mlperf_training_import


class Command(BaseCommand):
    help = (
        f"Import the bundled MLPerf Training rounds ({BUNDLED_DIR}): each system's accelerators, nodes "
        "and time to train per benchmark, tokens/s per GPU and MFU for the LLM benchmarks; then refit "
        "the training MFU per architecture. Idempotent."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            summary = mlperf_training_import()
        except LabTableError as exc:
            raise CommandError(str(exc)) from None
        for line in summary.as_lines():
            self.stdout.write(line)
