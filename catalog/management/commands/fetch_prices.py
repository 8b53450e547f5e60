"""manage.py fetch_prices [--cloud lambda --cloud vast ...]"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from catalog.models import PriceFetch
from catalog.services.prices.fetch import prices_fetch


class Command(BaseCommand):
    help = (
        "Download the newest published SkyPilot catalogue files (PRICE_FETCH_BASE_URL/<cloud>/vms.csv) "
        "and import them; each fetch is recorded (admin, /providers/)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--cloud",
            action="append",
            dest="clouds",
            help=f"A cloud to fetch (repeatable); default: {', '.join(settings.PRICE_FETCH_CLOUDS)}.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        clouds = options["clouds"] or None
        for cloud in clouds or []:
            if not cloud.replace("-", "").replace("_", "").isalnum():
                raise CommandError(f"--cloud {cloud!r} is not a catalogue folder name (letters, digits, - and _)")
        fetches = prices_fetch(clouds=clouds)
        for fetch in fetches:
            style = self.style.ERROR if fetch.status == PriceFetch.Status.FAILED else self.style.SUCCESS
            line = f"{fetch.source}: {fetch.status}"
            if fetch.http_status:
                line += f" (HTTP {fetch.http_status}, {fetch.bytes} bytes, {fetch.attempts} attempt(s))"
            if fetch.error:
                line += f": {fetch.error}"
            self.stdout.write(style(line))
        failed = [f.source for f in fetches if f.status == PriceFetch.Status.FAILED]
        if failed:
            raise CommandError(f"{len(failed)} of {len(fetches)} fetch(es) failed: {', '.join(failed)}")
