"""Download the newest published SkyPilot catalogue files and import them (``fetch_prices``).

Per cloud: ``<PRICE_FETCH_BASE_URL>/<cloud>/vms.csv`` with a conditional request (the ETag and
Last-Modified of the last good fetch), a timeout, retries with exponential backoff on network
errors and 5xx answers, and a size bound. Each cloud is isolated: its failure is recorded and
the others go on. Every fetch is a ``PriceFetch`` row (admin, /providers/).

* 200: the body must parse as a complete SkyPilot file (a cut-off last line or a missing
  column fails the fetch and imports nothing); it is kept under PRICE_FETCH_DIR and imported
  with the fetch time as its observation time.
* 304 Not Modified: the kept copy of the last good fetch is imported again at the fetch time:
  the catalogue still lists those offers at those prices, so they stay current.
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import io
import logging
import time
from dataclasses import dataclass
from pathlib import Path

import requests
from django.conf import settings
from django.utils import timezone

from catalog.models import PriceFetch, PriceSnapshot
from catalog.services.prices.common import FileSummary
from catalog.services.prices.importer import price_import_file
from catalog.services.prices.skypilot import REQUIRED_COLUMNS

logger = logging.getLogger(__name__)
USER_AGENT = "gpuatlas-price-fetch (+https://github.com/skypilot-org/skypilot-catalog reader)"
_RETRY_STATUS = {429, 500, 502, 503, 504}


class FetchError(Exception):
    """A fetch that cannot give a usable file; the message says why."""


@dataclass
class Download:
    status: int
    body: bytes
    etag: str
    last_modified: str
    attempts: int


def _download(*, url: str, etag: str, last_modified: str, session: requests.Session) -> Download:
    headers = {"User-Agent": USER_AGENT}
    if etag:
        headers["If-None-Match"] = etag
    if last_modified:
        headers["If-Modified-Since"] = last_modified
    attempts = 0
    while True:
        attempts += 1
        try:
            response = session.get(url, headers=headers, timeout=settings.PRICE_FETCH_TIMEOUT_SECONDS, stream=True)
            if response.status_code in _RETRY_STATUS:
                raise FetchError(f"HTTP {response.status_code}")
            body = b""
            if response.status_code == 200:
                chunks, size = [], 0
                for chunk in response.iter_content(chunk_size=65536):
                    size += len(chunk)
                    if size > settings.PRICE_FETCH_MAX_BYTES:
                        raise FetchError(f"larger than PRICE_FETCH_MAX_BYTES ({settings.PRICE_FETCH_MAX_BYTES} bytes)")
                    chunks.append(chunk)
                body = b"".join(chunks)
            return Download(
                response.status_code,
                body,
                response.headers.get("ETag", ""),
                response.headers.get("Last-Modified", ""),
                attempts,
            )
        except (
            requests.ConnectionError,
            requests.Timeout,
            requests.exceptions.ChunkedEncodingError,
            FetchError,
        ) as exc:
            retryable = not isinstance(exc, FetchError) or str(exc).startswith("HTTP")
            if not retryable or attempts > settings.PRICE_FETCH_RETRIES:
                raise FetchError(f"{exc} (after {attempts} attempt{'s' if attempts > 1 else ''})") from None
            time.sleep(settings.PRICE_FETCH_BACKOFF_SECONDS * 2 ** (attempts - 1))


def catalogue_text_check(body: bytes) -> str:
    """The body as text if it is a complete SkyPilot catalogue; FetchError naming the problem."""
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FetchError(f"not UTF-8 (byte {exc.start})") from None
    if not text.endswith("\n"):
        raise FetchError("the file is cut off (no line end after its last row)")
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, [])
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing or not ({"Price", "SpotPrice"} & set(header)):
        raise FetchError(f"not a SkyPilot catalogue: header lacks {', '.join(missing) or 'Price or SpotPrice'}")
    for number, row in enumerate(reader, start=2):
        if row and len(row) != len(header):
            raise FetchError(f"line {number} has {len(row)} fields, the header {len(header)}: the file is damaged")
    return text


def _kept_copy(cloud: str) -> Path:
    return Path(settings.PRICE_FETCH_DIR) / "v8" / cloud / "vms.csv"


def price_fetch_cloud(*, cloud: str, session: requests.Session | None = None) -> PriceFetch:
    """Fetch and import one cloud's catalogue file; always returns the recorded PriceFetch."""
    url = f"{settings.PRICE_FETCH_BASE_URL.rstrip('/')}/{cloud}/vms.csv"
    started = timezone.now()
    fetch = PriceFetch(source=cloud, url=url, started_at=started, status=PriceFetch.Status.FAILED)
    previous = (
        PriceFetch.objects.filter(source=cloud, status__in=[PriceFetch.Status.CHANGED, PriceFetch.Status.UNCHANGED])
        .exclude(etag="", last_modified="")
        .order_by("-started_at")
        .first()
    )
    kept = _kept_copy(cloud)
    conditional = previous is not None and kept.is_file()
    try:
        download = _download(
            url=url,
            etag=previous.etag if conditional and previous else "",
            last_modified=previous.last_modified if conditional and previous else "",
            session=session or requests.Session(),
        )
        fetch.http_status, fetch.attempts = download.status, download.attempts
        if download.status == 304:
            if not conditional:
                raise FetchError("304 Not Modified to a request that was not conditional")
            fetch.status = PriceFetch.Status.UNCHANGED
            fetch.etag = download.etag or (previous.etag if previous else "")
            fetch.last_modified = download.last_modified or (previous.last_modified if previous else "")
            body = kept.read_bytes()
        elif download.status == 200:
            catalogue_text_check(download.body)
            fetch.status = PriceFetch.Status.CHANGED
            fetch.etag, fetch.last_modified = download.etag, download.last_modified
            body = download.body
            kept.parent.mkdir(parents=True, exist_ok=True)
            partial = kept.with_suffix(".part")
            partial.write_bytes(body)
            partial.replace(kept)
        else:
            raise FetchError(f"HTTP {download.status}")
        fetch.bytes, fetch.sha256 = len(body), hashlib.sha256(body).hexdigest()
        summary = _import(kept, cloud, started, fetch)
        if summary.error:
            raise FetchError(f"import failed: {summary.error}")
    except FetchError as exc:
        fetch.status, fetch.error = PriceFetch.Status.FAILED, str(exc)[:2000]
        logger.warning("price fetch of %s failed: %s", url, exc)
    except OSError as exc:
        fetch.status, fetch.error = PriceFetch.Status.FAILED, f"cannot keep the downloaded file: {exc}"
    fetch.finished_at = timezone.now()
    fetch.save()
    return fetch


def _import(path: Path, cloud: str, started: dt.datetime, fetch: PriceFetch) -> FileSummary:
    summary = price_import_file(
        path=path,
        format="skypilot",
        observed_at=started,
        date_basis=PriceSnapshot.DateBasis.FETCHED,
        date_note=f"fetched from {fetch.url}"
        + (" (not modified since the last fetch)" if fetch.http_status == 304 else ""),
        source_name=f"skypilot-catalog/v8/{cloud}/vms.csv",
    )
    if summary.import_run_id:
        fetch.import_run_id = summary.import_run_id
    return summary


def prices_fetch(*, clouds: list[str] | None = None) -> list[PriceFetch]:
    """Fetch every configured cloud (PRICE_FETCH_CLOUDS), one after the other, each isolated."""
    session = requests.Session()
    return [price_fetch_cloud(cloud=cloud, session=session) for cloud in (clouds or settings.PRICE_FETCH_CLOUDS)]
