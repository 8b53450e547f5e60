"""python manage.py import_trtllm [FILE ...] [--release 1.0 --commit SHA --date YYYY-MM-DD --upstream-path PATH]
python manage.py import_trtllm --guide FILE --title TITLE --commit SHA --date YYYY-MM-DD --upstream-path PATH"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from benchmarks_app.services.lab_tables import LabTableError
from llm.services.trtllm_import import (
    BUNDLED_DIR,
    BUNDLED_FILES,
    BUNDLED_GUIDES,
    PERFORMANCE_PATH,
    TrtllmGuide,
    trtllm_guide_import_file,
    trtllm_import_file,
)


class Command(BaseCommand):
    help = (
        "Import NVIDIA's TensorRT-LLM performance overview tables (docs/source/performance/perf-overview.md, any "
        "release's layout) as lab results and derive their serving points; with --guide, the trtllm-bench runs of a "
        "performance guide (one per section with a report). Without FILE, imports the copies in "
        f"{BUNDLED_DIR} (overviews and guides). Idempotent per file."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("files", nargs="*", type=Path)
        parser.add_argument("--guide", action="store_true", help="FILE is a performance guide, not the overview")
        parser.add_argument("--title", default="", help="a guide's title, as its first heading gives it")
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
        if options["guide"]:
            self._guides(options)
            return
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
        if not options["files"]:
            for guide in BUNDLED_GUIDES:
                for line in trtllm_guide_import_file(path=BUNDLED_DIR / "guides" / guide.file, guide=guide).as_lines():
                    self.stdout.write(line)

    def _guides(self, options: dict[str, Any]) -> None:
        if not options["files"]:
            raise CommandError("--guide needs the FILE of a guide (the bundled guides are imported without FILE)")
        missing = [name for name in ("title", "commit", "date") if not options[name]]
        if missing or options["upstream_path"] == PERFORMANCE_PATH:
            raise CommandError("a guide needs --title, --commit, --date and --upstream-path (its source)")
        try:
            date = dt.date.fromisoformat(options["date"])
        except ValueError:
            raise CommandError(f"--date: {options['date']!r} is not a date (YYYY-MM-DD)") from None
        for path in options["files"]:
            guide = TrtllmGuide(Path(path).name, options["title"], options["commit"], options["upstream_path"], date)
            try:
                summary = trtllm_guide_import_file(path=path, guide=guide)
            except LabTableError as exc:
                raise CommandError(str(exc)) from None
            for line in summary.as_lines():
                self.stdout.write(line)
