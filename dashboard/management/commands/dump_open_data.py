"""python manage.py dump_open_data <dir>: the public data as CSV and JSON with a README."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from dashboard.services import open_data_dump


class Command(BaseCommand):
    help = "Write GPUs, offers, price history, accepted results and aggregates as CSV and JSON, with a README."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument("directory", help="Output directory (created when missing).")

    def handle(self, *args, **options):  # type: ignore[no-untyped-def]
        directory = Path(options["directory"])
        if directory.exists() and not directory.is_dir():
            raise CommandError(f"{directory} exists and is not a directory")
        try:
            counts = open_data_dump(directory=directory)
        except OSError as error:
            raise CommandError(f"cannot write to {directory}: {error.strerror or error}") from error
        for table, count in counts.items():
            self.stdout.write(f"{table}: {count} rows -> {directory / table}.csv, .json")
        self.stdout.write(self.style.SUCCESS(f"wrote {sum(counts.values())} rows and README.md to {directory}"))
