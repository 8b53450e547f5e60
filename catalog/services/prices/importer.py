"""Import price files: one file (one ImportRun, one transaction) or a whole directory."""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import logging
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.db import DatabaseError, OperationalError, transaction
from django.utils import timezone

from catalog.matching import GpuMatcher
from catalog.models import ImportRun, PriceSnapshot, Provider
from catalog.services.prices.common import (
    FileSummary,
    ParsedFile,
    PriceFileError,
)
from catalog.services.prices.curated_csv import parse_curated_csv
from catalog.services.prices.currency import RateBook, exchange_rates_import_csv
from catalog.services.prices.derive import gpu_prices_derive
from catalog.services.prices.detect import (
    ALL_FORMATS,
    EXCHANGE_RATES,
    SKYPILOT_ACCELERATORS,
    format_detect,
)
from catalog.services.prices.fsdl import parse_fsdl
from catalog.services.prices.providers import providers_catalogue_sync
from catalog.services.prices.skypilot import GcpHostPool, gcp_host_pool, parse_skypilot, skypilot_feed
from catalog.services.prices.tugot17 import parse_tugot17
from catalog.services.prices.writer import snapshot_write
from gpuatlas.data_version import data_version_bump
from gpuatlas.followups import followup_after_commit
from gpuatlas.progress import Progress, no_progress

logger = logging.getLogger(__name__)

PARSERS: dict[str, Callable[..., ParsedFile]] = {
    "skypilot": parse_skypilot,
    "fsdl": parse_fsdl,
    "tugot17": parse_tugot17,
    "curated-csv": parse_curated_csv,
}
MANIFEST_NAME = "snapshots.toml"
FILE_DATE_NOTE = "no snapshot date stated: the date of the file, not of the prices"
IMPORTABLE_SUFFIXES = (".csv", ".jsonl")
UNKNOWN_FORMAT = (
    "unknown price file format (expected a SkyPilot vms.csv, FSDL cloud-gpus.csv, tracker .jsonl or curated CSV)"
)


@dataclass(frozen=True)
class SnapshotTime:
    """When the prices of a file without timestamps were observed, and how we know."""

    observed_at: dt.datetime
    basis: str
    note: str = ""


def _as_datetime(value: object) -> dt.datetime | None:
    if isinstance(value, dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    if isinstance(value, dt.date):
        return dt.datetime.combine(value, dt.time(), tzinfo=dt.UTC)
    return None


def snapshot_time_for(*, path: Path, root: Path | None = None) -> SnapshotTime:
    """When the prices in ``path`` were observed, for files that carry no timestamps.

    A ``snapshots.toml`` in the file's folder or a parent (up to ``root``) gives it per file or
    folder prefix: a table ``{observed_at = ..., basis = "published" | "estimate" | "fetched",
    note = "..."}`` or a bare date (a commit or publication date). Without one the date is not
    known: the file's modification time stands in as an estimate (pages say "date unknown, file
    of DATE"), whatever the format, since a copy's date is not when its prices were observed.
    """
    path = path.resolve()
    stop = root.resolve() if root else None
    for folder in path.parents:
        manifest = folder / MANIFEST_NAME
        if manifest.is_file():
            with manifest.open("rb") as handle:
                entries = tomllib.load(handle).get("files", {})
            relative = path.relative_to(folder).as_posix()
            matches = [k for k in entries if relative == k or relative.startswith(k.rstrip("/") + "/")]
            if matches:
                value = entries[max(matches, key=len)]
                entry = value if isinstance(value, dict) else {"observed_at": value}
                when = _as_datetime(entry.get("observed_at"))
                basis = str(entry.get("basis") or PriceSnapshot.DateBasis.PUBLISHED)
                if when is None or basis not in PriceSnapshot.DateBasis.values:
                    raise PriceFileError(
                        f"{manifest}: entry {max(matches, key=len)!r} needs observed_at and a known basis"
                    )
                return SnapshotTime(when, basis, str(entry.get("note") or ""))
        if stop is not None and folder == stop:
            break
    modified = dt.datetime.fromtimestamp(path.stat().st_mtime, tz=dt.UTC).replace(microsecond=0)
    return SnapshotTime(modified, PriceSnapshot.DateBasis.ESTIMATE, FILE_DATE_NOTE)


def price_import_file(
    *,
    path: Path,
    format: str | None = None,
    observed_at: dt.datetime | None = None,
    date_basis: str = "",
    date_note: str = "",
    root: Path | None = None,
    progress: Progress = no_progress,
    matcher: GpuMatcher | None = None,
    rates: RateBook | None = None,
    unknown_is_error: bool = True,
    source_name: str = "",
    gcp_hosts: GcpHostPool | None = None,
) -> FileSummary:
    """Import one price file in one transaction and record it as an ImportRun.

    ``observed_at`` (with ``date_basis`` and ``date_note``) dates rows without a time of their
    own; by default ``snapshots.toml`` or the file's modification time does. ``source_name``
    stands for the path where the file's location is not its identity (a downloaded copy).
    ``gcp_hosts``: GCP host-VM rows of the other files of the same import, for GPU-only rows.

    Malformed rows are rejected with their line numbers and the rest imports; a file that
    cannot be read at all is recorded as a failed run. ``OperationalError`` (database gone,
    deadlock, serialisation failure) is re-raised after recording so a Celery task can retry.
    """
    started = time.monotonic()
    summary = FileSummary(path=str(path))
    try:
        raw = path.read_bytes()
    except OSError as exc:
        summary.error = f"cannot read {path}: {exc.strerror or exc}"
        return summary
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        # Replacing the bytes would import garbled names and notes without a word: refuse the file.
        run = _run_start(path=path, format=format or "unknown", raw=raw, summary=summary)
        _finish(run, summary, started, error=f"the file is not UTF-8 (byte {exc.start}): save it as UTF-8")
        return summary
    detected = format or format_detect(path=path, text=text)
    summary.format = detected or ""
    if detected is None and not unknown_is_error:
        summary.notes.append("not a price file of a known format: skipped")
        return summary
    run = _run_start(path=path, format=detected or "unknown", raw=raw, summary=summary)
    if detected is None:
        _finish(run, summary, started, error=UNKNOWN_FORMAT)
        return summary
    if detected not in ALL_FORMATS:
        _finish(run, summary, started, error=f"unknown format {detected!r}; choose from {', '.join(ALL_FORMATS)}")
        return summary
    _run_import(
        run=run,
        summary=summary,
        started=started,
        detected=detected,
        path=path,
        text=text,
        source=Path(source_name) if source_name else path,
        snapshot_time=_given_snapshot_time(observed_at=observed_at, date_basis=date_basis, date_note=date_note),
        root=root,
        progress=progress,
        matcher=matcher,
        rates=rates,
        gcp_hosts=gcp_hosts,
    )
    return summary


def _run_start(*, path: Path, format: str, raw: bytes, summary: FileSummary) -> ImportRun:
    """The ImportRun that records this file's import, whatever its outcome."""
    run = ImportRun.objects.create(path=str(path)[:500], format=format, sha256=hashlib.sha256(raw).hexdigest())
    summary.import_run_id = run.pk
    return run


def _given_snapshot_time(*, observed_at: dt.datetime | None, date_basis: str, date_note: str) -> SnapshotTime | None:
    """The caller's date for rows without a time of their own; None leaves it to the file's location."""
    if observed_at is None:
        return None
    return SnapshotTime(observed_at, date_basis or PriceSnapshot.DateBasis.PUBLISHED, date_note)


def _run_import(
    *,
    run: ImportRun,
    summary: FileSummary,
    started: float,
    detected: str,
    path: Path,
    text: str,
    source: Path,
    snapshot_time: SnapshotTime | None,
    root: Path | None,
    progress: Progress,
    matcher: GpuMatcher | None,
    rates: RateBook | None,
    gcp_hosts: GcpHostPool | None,
) -> None:
    """Import the text of a file of a known format and record the outcome on ``run``.

    A file that fails writes nothing: its rows are written in one transaction.
    """
    try:
        if detected == EXCHANGE_RATES:
            written = exchange_rates_import_csv(path=path)
            summary.rows_read = written
            summary.notes.append(f"{written} exchange rate(s) written")
        elif detected == SKYPILOT_ACCELERATORS:
            _accelerator_names_check(text, summary, matcher or GpuMatcher.load())
        else:
            _prices_write(
                run=run,
                summary=summary,
                detected=detected,
                path=path,
                text=text,
                source=source,
                snapshot_time=snapshot_time,
                root=root,
                progress=progress,
                matcher=matcher,
                rates=rates,
                gcp_hosts=gcp_hosts,
            )
    except OperationalError as exc:
        _finish(run, summary, started, error=f"database error (will be retried): {exc}")
        raise
    except (PriceFileError, ValueError) as exc:
        _finish(run, summary, started, error=str(exc))
        return
    except DatabaseError as exc:
        logger.exception("price import of %s failed", path)
        _finish(run, summary, started, error=f"database error, nothing from this file was written: {exc}")
        return
    _finish(run, summary, started)


def _prices_write(
    *,
    run: ImportRun,
    summary: FileSummary,
    detected: str,
    path: Path,
    text: str,
    source: Path,
    snapshot_time: SnapshotTime | None,
    root: Path | None,
    progress: Progress,
    matcher: GpuMatcher | None,
    rates: RateBook | None,
    gcp_hosts: GcpHostPool | None,
) -> None:
    """Parse a price file and write its rows as snapshots, all in one transaction."""
    if detected == "skypilot" and gcp_hosts is not None:
        parsed = parse_skypilot(path=source, text=text, gcp_hosts=gcp_hosts)
    else:
        parsed = PARSERS[detected](path=source, text=text)
    summary.feed = parsed.feed
    when = snapshot_time if snapshot_time is not None else snapshot_time_for(path=path, root=root)
    with transaction.atomic():
        providers_catalogue_sync()
        snapshot_write(
            parsed=parsed,
            observed_at=when.observed_at,
            date_basis=when.basis,
            date_note=when.note,
            import_run=run,
            matcher=matcher,
            rates=rates,
            summary=summary,
            progress=progress,
        )
        summary.gpus_repriced = sorted(gpu_prices_derive())
        data_version_bump()  # cached rankings and GPU pages read these prices
        # The price watches and ranking watches of the GPUs whose offers this file changed.
        followup_after_commit("watches.tasks.watches_evaluate_after_price_import", import_run_id=run.pk)


def _finish(run: ImportRun, summary: FileSummary, started: float, *, error: str = "") -> None:
    summary.seconds = time.monotonic() - started
    if error:
        summary.error = error
        # A failed file wrote nothing (its transaction rolled back): say so in the counts too.
        summary.offers_created = summary.offers_updated = summary.observations_added = 0
        summary.offers_marked_unavailable = 0
        summary.gpus_repriced = []
    run.status = ImportRun.Status.FAILED if error else ImportRun.Status.DONE
    run.finished_at = timezone.now()
    run.summary = summary.as_dict()
    run.rejected_rows = [r.as_dict() for r in summary.rejected]
    if len(summary.providers) == 1 and not error:
        run.provider = Provider.objects.filter(slug=summary.providers[0]).first()
    try:
        run.save()
    except DatabaseError:
        logger.exception("could not record the outcome of import run %s", run.pk)


def _accelerator_names_check(text: str, summary: FileSummary, matcher: GpuMatcher) -> None:
    """SkyPilot's canonical accelerator list carries no prices: report the names we cannot match."""
    rows = list(csv.DictReader(text.splitlines()))
    summary.rows_read = len(rows)
    missing = [
        r["AcceleratorName"]
        for r in rows
        if r.get("AcceleratorName") and not matcher.match(name=r["AcceleratorName"]).matched
    ]
    summary.notes.append(
        f"accelerator name list, no prices: {len(rows) - len(missing)} of {len(rows)} names match a catalogue GPU"
        + (f"; not matched: {', '.join(missing)}" if missing else "")
    )


def prices_import_directory(
    *, path: Path, format: str | None = None, progress: Progress = no_progress, observed_at: dt.datetime | None = None
) -> list[FileSummary]:
    """Import every price file under ``path`` (exchange rates first); one file's failure never stops the rest.

    This is what ``load_demo`` calls with the bundled snapshot (catalog/data/prices/).
    """
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in IMPORTABLE_SUFFIXES)
    rate_files = [p for p in files if format_detect(path=p) == EXCHANGE_RATES]
    summaries = [price_import_file(path=p, root=path) for p in rate_files]
    matcher = GpuMatcher.load()
    rates = RateBook.load()
    gcp_hosts = _gcp_hosts_of(files)
    for file in files:
        if file in rate_files:
            continue
        try:
            summaries.append(
                price_import_file(
                    path=file,
                    format=format,
                    root=path,
                    progress=progress,
                    matcher=matcher,
                    rates=rates,
                    observed_at=observed_at,
                    gcp_hosts=gcp_hosts,
                )
            )
        except OperationalError as exc:
            summaries.append(FileSummary(path=str(file), error=f"database error: {exc}"))
    return summaries


def _gcp_hosts_of(files: list[Path]) -> GcpHostPool:
    """The GCP host VMs of every GCP catalogue file of an import (whatever the order of the files)."""
    texts = []
    for file in files:
        if file.suffix.lower() != ".csv" or skypilot_feed(file)[1] != "gcp":
            continue
        try:
            texts.append(file.read_text(encoding="utf-8-sig"))
        except (OSError, UnicodeDecodeError):
            continue  # the file's own import reports it
    return gcp_host_pool(texts=texts)


def price_import_path(
    *, path: Path, format: str | None = None, progress: Progress = no_progress, observed_at: dt.datetime | None = None
) -> list[FileSummary]:
    """A file or a directory, as given to ``manage.py import_prices``."""
    if path.is_dir():
        return prices_import_directory(path=path, format=format, progress=progress, observed_at=observed_at)
    return [price_import_file(path=path, format=format, progress=progress, observed_at=observed_at)]
