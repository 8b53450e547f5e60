"""python manage.py import_trtllm [FILE ...] [--release 1.0 --commit SHA --date YYYY-MM-DD --upstream-path PATH]"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from benchmarks_app.services.lab_tables import LabTableError
from llm.services.trtllm_import import BUNDLED_DIR, BUNDLED_FILES, PERFORMANCE_PATH, trtllm_import_file


class Command(BaseCommand):
    help = (
        "Import NVIDIA's TensorRT-LLM performance overview tables (docs/source/performance/perf-overview.md, any "
        "release's layout) as lab results and derive their serving points. Without FILE, imports the copies in "
        f"{BUNDLED_DIR}. Idempotent per file."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("files", nargs="*", type=Path)
        parser.add_argument("--release", default="", help="TensorRT-LLM release the file belongs to (e.g. 1.0)")
        parser.add_argument("--commit", default="", help="upstream commit of the file (40 hex digits)")
        parser.add_argument("--date", default="", help="date of the measurements (YYYY-MM-DD), marked estimated")
        parser.add_argument(
            "--upstream-path",
            default=PERFORMANCE_PATH,
            help="where the file sits in the TensorRT-LLM repository (docs/source/developer-guide/perf-overview.md "
            "from the 1.1 docs on)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        jobs = []
        if not options["files"]:
            jobs = [
                (BUNDLED_DIR / f.directory / "perf-overview.md", f.release, f.commit, f.dates, f.upstream_path)
                for f in BUNDLED_FILES
            ]
        else:
            if not (options["release"] and options["commit"] and options["date"]):
                raise CommandError("a file that is not bundled needs --release, --commit and --date (its source)")
            try:
                date = dt.date.fromisoformat(options["date"])
            except ValueError:
                raise CommandError(f"--date: {options['date']!r} is not a date (YYYY-MM-DD)") from None
            jobs = [
                (path, options["release"], options["commit"], {options["release"]: date}, options["upstream_path"])
                for path in options["files"]
            ]
        for path, release, commit, dates, upstream_path in jobs:
            try:
                summary = trtllm_import_file(
                    path=path, release=release, commit=commit, dates=dates, upstream_path=upstream_path
                )
            except LabTableError as exc:
                raise CommandError(str(exc)) from None
            for line in summary.as_lines():
                self.stdout.write(line)
