"""python manage.py rebuild_results [--lab-dir DIR | --no-lab]"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from benchmarks_app.services.lab_import import BUNDLED_DIR, LabImportError
from benchmarks_app.services.rebuild import results_rebuild
from catalog.management.progress import tqdm_progress


class Command(BaseCommand):
    help = "Re-derive every benchmark result and aggregate from the raw submissions and the bundled lab files."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--lab-dir", type=Path, default=BUNDLED_DIR, help=f"Lambda files (default: {BUNDLED_DIR})")
        parser.add_argument("--no-lab", action="store_true", help="do not re-import the lab results")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            summary = results_rebuild(
                lab_path=None if options["no_lab"] else options["lab_dir"], progress=tqdm_progress
            )
        except LabImportError as exc:
            raise CommandError(str(exc)) from None
        for line in summary.as_lines():
            self.stdout.write(line)
        if summary.failed:
            raise CommandError(f"{len(summary.failed)} submission(s) could not be re-derived (listed above)")
