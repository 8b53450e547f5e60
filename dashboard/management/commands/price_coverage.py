"""Per measured GPU: its providers, the newest date of their prices and the typical price, or why
it has none; then the share of current offers whose form factor is not stated.

manage.py price_coverage
manage.py price_coverage --priced-only
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandParser

from catalog.selectors.price_health import price_coverage
from dashboard.selectors.price_coverage import measured_gpu_prices


class Command(BaseCommand):
    help = "Print each measured GPU's providers, newest price date and typical price, or why it has no price."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--priced-only", action="store_true", help="only the measured GPUs with a price")

    def handle(self, *args: object, **options: object) -> None:
        rows = measured_gpu_prices()
        priced = [r for r in rows if r.price]
        self.stdout.write(f"measured GPUs: {len(rows)}; with a current price: {len(priced)}")
        self.stdout.write(f"{'GPU':34} {'measured':28} {'prov.':>5} {'newest':24} {'typical':>9}  providers / why not")
        for row in rows:
            if options["priced_only"] and not row.price:
                continue
            measured = ", ".join(row.measured)
            if row.price is None:
                why = row.gap.text if row.gap else ""
                self.stdout.write(f"{row.gpu.slug:34} {measured:28} {0:>5} {'-':24} {'-':>9}  {why}")
                continue
            newest = row.newest
            date = f"{newest:%Y-%m-%d}" if newest else "-"
            if row.newest_is_estimate:
                date = f"date unknown, file of {date}"
            figure = f"{row.price.typical_usd:.2f}"
            thin = " (one marketplace listing)" if row.price.single_listing else ""
            self.stdout.write(
                f"{row.gpu.slug:34} {measured:28} {row.price.providers:>5} {date:24} {figure:>9}  "
                f"{'; '.join(row.providers)}{thin}"
            )
        coverage = price_coverage()
        self.stdout.write(
            f"current offers: {coverage.current}; form factor not stated (kept out of per-GPU rankings): "
            f"{coverage.ambiguous} ({coverage.ambiguous_share:.1%})"
        )
        for group in coverage.ambiguous_groups:
            self.stdout.write(f"  {group['provider__slug']} {group['gpu_name_raw']!r}: {group['offers']}")
