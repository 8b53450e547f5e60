"""python manage.py import_llamacpp [--xiongjiedai FILE ...] [--geerlingguy FILE] [--commit SHA] [--date YYYY-MM-DD]"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from benchmarks_app.services.geerling_import import geerling_import
from benchmarks_app.services.lab_tables import LabTableError, LabTableSummary
from benchmarks_app.services.llm_readme_tables import BUNDLED_DIR
from benchmarks_app.services.xiongjiedai_import import xiongjiedai_import


class Command(BaseCommand):
    help = (
        "Import the llama.cpp / Ollama tables (XiongjieDai/GPU-Benchmarks-on-LLM-Inference README revisions, "
        "geerlingguy/ai-benchmarks README) as lab results; OOM cells are stored as 'does not fit'. "
        f"Without options, imports the copies bundled in {BUNDLED_DIR}. Idempotent; lists unmatched GPU names."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--xiongjiedai", action="append", type=Path, default=[], help="a README revision (repeat, newest first)"
        )
        parser.add_argument("--geerlingguy", type=Path, help="the geerlingguy/ai-benchmarks README")
        parser.add_argument("--commit", default="unknown", help="upstream commit of the given file(s)")
        parser.add_argument("--date", help="date of the given file(s) (YYYY-MM-DD), used when a table gives none")

    def handle(self, *args: Any, **options: Any) -> None:
        given = bool(options["xiongjiedai"] or options["geerlingguy"])
        day = None
        if options["date"]:
            try:
                day = dt.date.fromisoformat(options["date"])
            except ValueError:
                raise CommandError(f"--date: {options['date']!r} is not a date (YYYY-MM-DD)") from None
        if given and day is None:
            raise CommandError("--date is required with --xiongjiedai or --geerlingguy (every figure carries its date)")
        summaries: list[LabTableSummary] = []
        try:
            if not given or options["xiongjiedai"]:
                files = [(path, options["commit"], day) for path in options["xiongjiedai"]] if given else None
                summaries.append(xiongjiedai_import(files=files))  # type: ignore[arg-type]
            if not given or options["geerlingguy"]:
                summaries.append(
                    geerling_import(path=options["geerlingguy"], commit=options["commit"] if given else "", day=day)
                )
        except LabTableError as exc:
            raise CommandError(str(exc)) from None
        for summary in summaries:
            for line in summary.as_lines():
                self.stdout.write(line)
            if summary.unmatched:
                self.stdout.write(
                    self.style.WARNING(
                        f"{len(summary.unmatched)} GPU name(s) unmatched: stored as LabImportRow (outcome 'unmatched')."
                    )
                )
