"""python manage.py import_lambda_benchmarks [DIR]"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from benchmarks_app.services.lab_import import BUNDLED_DIR, LabImportError, lambda_import_directory
from catalog.management.progress import tqdm_progress


class Command(BaseCommand):
    help = (
        "Import Lambda's deep-learning benchmark tables (training throughput, FP16/FP32, 1-8 GPUs) as lab results. "
        "Idempotent; lists the GPU names it could not match."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("directory", nargs="?", type=Path, default=BUNDLED_DIR, help=f"default: {BUNDLED_DIR}")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            summary = lambda_import_directory(path=options["directory"], progress=tqdm_progress)
        except LabImportError as exc:
            raise CommandError(str(exc)) from None
        for line in summary.as_lines():
            self.stdout.write(line)
        if summary.unmatched:
            self.stdout.write(
                self.style.WARNING(
                    f"{len(summary.unmatched)} GPU name(s) unmatched: their rows were not imported. "
                    "Add aliases (catalog curated data) and run this again."
                )
            )
