"""Cloud GPU prices: importers (one module per format), history writer, currencies, curation.

Public services:

* ``price_import_file(*, path, format=None, observed_at=None)`` -> FileSummary
* ``prices_import_directory(*, path)`` -> list[FileSummary] (what ``load_demo`` calls)
* ``price_import_path(*, path, format=None)`` (file or directory, for the command)
* ``unmatched_gpu_name_resolve(*, unmatched, gpu)`` (admin mapping of unmatched names)
* ``offer_gpu_map(*, offers, gpu, user=None, note="")`` (admin mapping of offers of unstated form factor)
* ``prices_fetch(*, clouds=None)`` in ``catalog.services.prices.fetch`` (what ``fetch_prices`` runs)
* ``exchange_rate_upsert(*, currency, date, usd_per_unit, source)``
"""

from pathlib import Path

from catalog.services.prices.common import FileSummary, RowRejection
from catalog.services.prices.currency import NoExchangeRate, RateBook, exchange_rate_upsert, exchange_rates_import_csv
from catalog.services.prices.detect import ALL_FORMATS, PRICE_FORMATS, format_detect
from catalog.services.prices.importer import (
    price_import_file,
    price_import_path,
    prices_import_directory,
    snapshot_time_for,
)
from catalog.services.prices.mapping import offer_gpu_map, unmatched_gpu_name_resolve

BUNDLED_PRICES_DIR = Path(__file__).resolve().parents[2] / "data" / "prices"

__all__ = [
    "ALL_FORMATS",
    "BUNDLED_PRICES_DIR",
    "PRICE_FORMATS",
    "FileSummary",
    "NoExchangeRate",
    "RateBook",
    "RowRejection",
    "exchange_rate_upsert",
    "exchange_rates_import_csv",
    "format_detect",
    "price_import_file",
    "price_import_path",
    "prices_import_directory",
    "snapshot_time_for",
    "offer_gpu_map",
    "unmatched_gpu_name_resolve",
]
