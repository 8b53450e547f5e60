"""python manage.py rebuild_prices"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from catalog.models import GpuPrice, Offer
from catalog.services.prices.derive import gpu_prices_rebuild


class Command(BaseCommand):
    help = (
        "Derive every GPU's stored typical, cheapest and spot prices (and the placeholder marks) again "
        "from the offers in the database: after an upgrade that adds stored prices, or a change of the rule."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        changed = gpu_prices_rebuild()
        self.stdout.write(
            f"{len(changed)} GPU(s) repriced; {GpuPrice.objects.count()} stored prices, "
            f"{Offer.objects.placeholders().count()} placeholder offer(s)"
        )
