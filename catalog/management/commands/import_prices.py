"""manage.py import_prices <path-or-dir> [--format ...] [--observed-at ...]"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from catalog.management.progress import tqdm_progress
from catalog.services.prices import ALL_FORMATS, price_import_path


class Command(BaseCommand):
    help = (
        "Import cloud GPU prices from a file or a directory (format detected per file: SkyPilot "
        "vms.csv, FSDL cloud-gpus.csv, tugot17 tracker .jsonl, curated CSV, exchange_rates.csv)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="A price file, or a directory imported recursively.")
        parser.add_argument("--format", choices=ALL_FORMATS, help="Skip detection and read every file as this format.")
        parser.add_argument(
            "--observed-at",
            help="ISO date or date-time the prices were observed (default: snapshots.toml, else the file's modification time).",
        )
        parser.add_argument("--max-rejections", type=int, default=20, help="Rejected rows to print per file.")

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["path"])
        if not path.exists():
            raise CommandError(f"{path} does not exist")
        observed_at = None
        if options["observed_at"]:
            try:
                observed_at = dt.datetime.fromisoformat(options["observed_at"].replace("Z", "+00:00"))
            except ValueError:
                raise CommandError(
                    f"--observed-at {options['observed_at']!r} is not an ISO date or date-time"
                ) from None
            if observed_at.tzinfo is None:
                observed_at = observed_at.replace(tzinfo=dt.UTC)
        summaries = price_import_path(
            path=path, format=options["format"], progress=tqdm_progress, observed_at=observed_at
        )
        failed = 0
        totals = {"rows": 0, "created": 0, "observations": 0, "rejected": 0}
        unmatched: dict[str, int] = {}
        for summary in summaries:
            style = self.style.ERROR if summary.error else self.style.SUCCESS
            lines = summary.as_lines(max_rejections=options["max_rejections"])
            self.stdout.write(style(lines[0]))
            for line in lines[1:]:
                self.stdout.write(line)
            failed += bool(summary.error)
            totals["rows"] += summary.rows_read
            totals["created"] += summary.offers_created
            totals["observations"] += summary.observations_added
            totals["rejected"] += len(summary.rejected)
            for name, count in summary.unmatched.items():
                unmatched[name] = unmatched.get(name, 0) + count
        self.stdout.write(
            f"{len(summaries)} file(s): {totals['rows']} rows, {totals['created']} offers created, "
            f"{totals['observations']} observations added, {totals['rejected']} rows rejected, {failed} file(s) failed"
        )
        if unmatched:
            self.stdout.write(
                self.style.WARNING(
                    f"{len(unmatched)} GPU name(s) not matched (offers kept without a GPU; map them in the admin):"
                )
            )
            for name, count in sorted(unmatched.items(), key=lambda item: (-item[1], item[0])):
                self.stdout.write(f"  {name}: {count} offer(s)")
        if failed:
            raise CommandError(f"{failed} file(s) failed; the others were imported")
