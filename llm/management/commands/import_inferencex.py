"""python manage.py import_inferencex [FILE]"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from benchmarks_app.services.lab_tables import LabTableError
from llm.services.inferencex_import import BUNDLED_FILE, inferencex_import_file


class Command(BaseCommand):
    help = (
        "Import SemiAnalysis InferenceX's DeepSeek-R1 serving runs (llm/data/inferencex/benchmarks.json) as lab "
        "results and derive their serving points. Idempotent."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("file", nargs="?", type=Path, default=BUNDLED_FILE)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            summary = inferencex_import_file(path=options["file"])
        except LabTableError as exc:
            raise CommandError(str(exc)) from None
        for line in summary.as_lines():
            self.stdout.write(line)
