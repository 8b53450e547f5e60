"""python manage.py import_mlperf [FILE ...] [--published YYYY-MM-DD] [--round 6.1]"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from benchmarks_app.services.lab_tables import LabTableError
from benchmarks_app.services.mlperf_import import BUNDLED_DIR, BUNDLED_FILES, mlperf_import_file


def _date(value: str) -> dt.date:
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise CommandError(f"--published: {value!r} is not a date (YYYY-MM-DD)") from None


class Command(BaseCommand):
    help = (
        "Import MLPerf Inference results (summary.csv or summary_results.json of any round, optionally .gz) "
        "as lab results: per-accelerator throughput, latencies as published. Idempotent per round; "
        "lists unmatched and heterogeneous accelerator names. Without FILE, imports the bundled rounds."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("files", nargs="*", type=Path, help=f"default: the rounds bundled in {BUNDLED_DIR}")
        parser.add_argument(
            "--published",
            help="date the round's results were published (YYYY-MM-DD); required for files that are not bundled",
        )
        parser.add_argument("--round", default="", help="round (e.g. 6.1) when the file has no version column")

    def handle(self, *args: Any, **options: Any) -> None:
        bundled = {(BUNDLED_DIR / name).resolve(): published for name, published in BUNDLED_FILES}
        files = options["files"] or [BUNDLED_DIR / name for name, _ in BUNDLED_FILES]
        published_option = _date(options["published"]) if options["published"] else None
        for path in files:
            published = published_option or bundled.get(Path(path).resolve())
            if published is None:
                raise CommandError(
                    f"{path}: pass --published YYYY-MM-DD, the date the round's results were published "
                    "(every imported figure carries its date)"
                )
            try:
                summary = mlperf_import_file(path=path, published=published, round_override=options["round"])
            except LabTableError as exc:
                raise CommandError(str(exc)) from None
            for line in summary.as_lines():
                self.stdout.write(line)
            if summary.unmatched:
                self.stdout.write(
                    self.style.WARNING(
                        f"{len(summary.unmatched)} accelerator name(s) unmatched: their rows are stored as "
                        "LabImportRow (outcome 'unmatched'). Add aliases or curated GPUs and run this again."
                    )
                )
