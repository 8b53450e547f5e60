"""What every price format parses into: rows, rejections, the file summary, cell parsing, providers.

A parser reads a file into ``OfferRow`` objects and ``RowRejection`` objects (line + reason);
``writer.snapshot_write`` then links GPUs (``linking``), creates or updates ``Offer`` rows,
appends ``PriceObservation`` rows and marks offers missing from a newer snapshot as
unavailable. Parsers never touch the database, so a malformed row can never leave half an
offer behind.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

PRICE_QUANTUM = Decimal("0.000001")  # the 6 decimal places of the price columns
# Far above any GPU rental price, and far below what the price columns (14 digits, 6 decimals)
# hold, so that a typo is a row rejection rather than a database error that fails the file.
MAX_PRICE_PER_HOUR = Decimal("1000000")
# The offer columns' lengths (catalog.models.prices): longer text is a row rejection.
TEXT_LIMITS = {"instance_type": 200, "region": 200, "zone": 200, "gpu_name_raw": 200, "provider": 64}


class RowError(ValueError):
    """A row cannot be imported; the message says which column and why."""


class PriceFileError(ValueError):
    """The whole file cannot be imported (unknown format, missing header column...)."""


@dataclass(frozen=True)
class RowRejection:
    line: int
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {"line": self.line, "reason": self.reason}


@dataclass
class OfferRow:
    """One offer as read from a file, before GPU matching and currency conversion.

    ``price_per_hour`` is the whole-instance price; ``None`` with ``unavailable=True`` means
    the source says the offer exists but cannot be had now (SkyPilot's 700.0 placeholder).
    """

    line: int
    provider: str
    instance_type: str
    gpu_name_raw: str
    gpu_count: float
    price_per_hour: Decimal | None
    currency: str = "USD"
    region: str = ""
    zone: str = ""
    is_spot: bool = False
    other_gpu_names: tuple[str, ...] = ()
    hints: str = ""
    memory_candidates: tuple[float, ...] = ()
    vcpus: float | None = None
    ram_gib: float | None = None
    price_separable: bool = True
    unavailable: bool = False
    observed_at: dt.datetime | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def identity(self) -> tuple[str, str, str, str, bool]:
        return (self.provider, self.instance_type, self.region, self.zone, self.is_spot)


@dataclass
class ParsedFile:
    format: str
    feed: str
    rows: list[OfferRow] = field(default_factory=list)
    rejected: list[RowRejection] = field(default_factory=list)
    rows_read: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # Each observation time's rows are the whole listing (an offer missing from a newer one is
    # withdrawn); False where rows are independent observations (the curated format).
    complete_snapshots: bool = True

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


@dataclass
class FileSummary:
    """The per-file report: what the command prints and what ImportRun.summary stores."""

    path: str
    format: str = ""
    feed: str = ""
    rows_read: int = 0
    offers_created: int = 0
    offers_updated: int = 0
    observations_added: int = 0
    offers_marked_unavailable: int = 0
    not_separable: int = 0
    listed_unavailable: int = 0
    memory_mismatches: dict[str, str] = field(default_factory=dict)
    ambiguous: dict[str, int] = field(default_factory=dict)
    snapshots: list[str] = field(default_factory=list)
    unmatched: dict[str, int] = field(default_factory=dict)
    rejected: list[RowRejection] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    providers: list[str] = field(default_factory=list)
    error: str = ""
    import_run_id: int | None = None
    seconds: float = 0.0
    # GPUs whose derived prices (typical, cheapest, spot; catalog.models.GpuPrice) this import changed.
    gpus_repriced: list[int] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.error

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "format": self.format,
            "feed": self.feed,
            "providers": self.providers,
            "rows_read": self.rows_read,
            "offers_created": self.offers_created,
            "offers_updated": self.offers_updated,
            "observations_added": self.observations_added,
            "offers_marked_unavailable": self.offers_marked_unavailable,
            "not_separable": self.not_separable,
            "listed_unavailable": self.listed_unavailable,
            "memory_mismatches": self.memory_mismatches,
            "ambiguous_form_factor": self.ambiguous,
            "snapshots": self.snapshots,
            "unmatched_names": self.unmatched,
            "rows_rejected": len(self.rejected),
            "skipped": self.skipped,
            "notes": self.notes,
            "error": self.error,
            "gpus_repriced": self.gpus_repriced,
            "seconds": round(self.seconds, 3),
        }

    def as_lines(self, *, max_rejections: int = 20) -> list[str]:
        if self.error:
            return [f"{self.path}: FAILED: {self.error}"]
        lines = [
            f"{self.path} [{self.format}]: {self.rows_read} rows read, offers {self.offers_created} created / "
            f"{self.offers_updated} updated, {self.observations_added} observations added, "
            f"{self.offers_marked_unavailable} marked unavailable, {len(self.rejected)} rows rejected"
        ]
        if self.not_separable:
            lines.append(
                f"  {self.not_separable} offer(s) priced without their GPU (host VM only): kept, not separable"
            )
        if self.listed_unavailable:
            lines.append(
                f"  {self.listed_unavailable} offer(s) listed as unavailable (placeholder price 700.0): kept, no price"
            )
        if self.memory_mismatches:
            names = "; ".join(f"{name}: {what}" for name, what in sorted(self.memory_mismatches.items()))
            lines.append(f"  matched by name although the reported memory differs (check these): {names}")
        if self.ambiguous:
            names = ", ".join(f"{name} ({count} offers)" for name, count in sorted(self.ambiguous.items()))
            lines.append(f"  form factor not stated (SXM or PCIe...), kept out of rankings until mapped: {names}")
        for reason, count in sorted(self.skipped.items()):
            lines.append(f"  skipped {count}: {reason}")
        if self.unmatched:
            names = ", ".join(f"{name} ({count} offers)" for name, count in sorted(self.unmatched.items()))
            lines.append(f"  unmatched GPU names (offers kept without a GPU; map them in the admin): {names}")
        for rejection in self.rejected[:max_rejections]:
            lines.append(f"  line {rejection.line}: {rejection.reason}")
        if len(self.rejected) > max_rejections:
            lines.append(
                f"  ... and {len(self.rejected) - max_rejections} more rejected rows (see ImportRun #{self.import_run_id})"
            )
        lines.extend(f"  note: {note}" for note in self.notes)
        return lines


# --- cell parsing shared by the CSV formats -------------------------------------------------


def parse_decimal_price(cell: str | None, column: str) -> Decimal | None:
    """A price cell as a Decimal rounded to the stored 6 places; ``None`` when empty or zero.

    Zero means "not offered" in the sources (vast writes SpotPrice 0.00); float noise such as
    ``5.8854999999999995`` is rounded away here, once.
    """
    text = (cell or "").strip()
    if not text:
        return None
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise RowError(f"{column} {text!r} is not a number") from None
    if not value.is_finite():
        raise RowError(f"{column} {text!r} is not a finite number")
    if value < 0:
        raise RowError(f"{column} {text} is negative")
    if value > MAX_PRICE_PER_HOUR:
        raise RowError(f"{column} {text} is out of range (at most {MAX_PRICE_PER_HOUR} per hour)")
    value = value.quantize(PRICE_QUANTUM, rounding=ROUND_HALF_UP)
    return value if value > 0 else None


def parse_float(cell: str | None, column: str, *, required: bool = False, positive: bool = False) -> float | None:
    text = (cell or "").strip().strip("'\"")
    if not text:
        if required:
            raise RowError(f"{column} is empty")
        return None
    try:
        value = float(text)
    except ValueError:
        raise RowError(f"{column} {text!r} is not a number") from None
    if not math.isfinite(value):
        raise RowError(f"{column} {text!r} is not a finite number")
    if value < 0 or (positive and value == 0):
        raise RowError(f"{column} {text} must be {'positive' if positive else 'zero or more'}")
    return value


def per_gpu(price: Decimal, gpu_count: float) -> Decimal:
    return (price / Decimal(str(gpu_count))).quantize(PRICE_QUANTUM, rounding=ROUND_HALF_UP)


def offer_row_problem(row: OfferRow) -> str | None:
    """Why ``row`` cannot be stored as it is (a NUL character, text longer than its column), or None."""
    for name, limit in TEXT_LIMITS.items():
        value = getattr(row, name)
        if "\x00" in value:
            return f"{name} holds a NUL character"
        if len(value) > limit:
            return f"{name} is {len(value)} characters long; the limit is {limit}"
    return None
