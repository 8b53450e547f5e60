"""How much of the current market is rankable, and the typical prices of the baseline GPUs.

manage.py price_coverage
manage.py price_coverage --gpu a100-sxm4-80-gb --gpu l4
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandParser

from catalog.models import Gpu
from catalog.selectors.price_health import price_coverage
from catalog.selectors.prices import gpu_rent_prices

BASELINES = ("a100-sxm4-80-gb", "h100-sxm5-80-gb", "h100-pcie-80-gb", "l4", "h200-sxm-141-gb", "geforce-rtx-4090")


class Command(BaseCommand):
    help = "Print the share of current offers whose form factor is not stated, and the typical price of some GPUs."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--gpu", action="append", default=[], help="catalogue slug (repeat); default: baselines")

    def handle(self, *args: object, **options: object) -> None:
        coverage = price_coverage()
        self.stdout.write(
            f"current offers: {coverage.current}; form factor not stated (kept out of per-GPU rankings): "
            f"{coverage.ambiguous} ({coverage.ambiguous_share:.1%})"
        )
        for group in coverage.ambiguous_groups:
            self.stdout.write(f"  {group['provider__slug']} {group['gpu_name_raw']!r}: {group['offers']}")
        slugs = list(options["gpu"] or BASELINES)  # type: ignore[call-overload]
        gpus = {g.pk: g for g in Gpu.objects.filter(slug__in=slugs)}
        missing = sorted(set(slugs) - {g.slug for g in gpus.values()})
        if missing:
            self.stderr.write(f"not in the catalogue: {', '.join(missing)}")
        prices = gpu_rent_prices(gpu_ids=list(gpus), rule="typical")
        for gpu in sorted(gpus.values(), key=lambda g: slugs.index(g.slug)):
            price = prices.get(gpu.pk)
            if price is None:
                self.stdout.write(f"{gpu.slug}: no current on-demand offer")
                continue
            spread = (
                "one provider only"
                if price.one_provider
                else f"{price.providers} providers, {price.minimum_usd:.2f}-{price.maximum_usd:.2f}"
            )
            self.stdout.write(f"{gpu.slug}: typical {price.typical_usd:.2f} USD/GPU-hour ({spread})")
