"""POST a submission to a GPU Atlas server, retrying what can succeed later and nothing else.

Retries are safe because the server is idempotent on ``run_uuid``: a body that reached it before a
connection dropped is answered with the submission it already stored, never stored twice.
"""

from __future__ import annotations

import ipaddress
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from http.client import HTTPException
from typing import Any

from . import CLIENT_NAME, __version__

SUBMISSIONS_PATH = "/api/v1/submissions/"
DRY_RUN_PATH = "dry-run/"  # under SUBMISSIONS_PATH: judged by the server's rules, never stored
RETRYABLE_STATUS = {408, 425, 429, 500, 502, 503, 504}
_MAX_BODY = 1 << 20
_MAX_RETRY_AFTER_S = 120.0


class SubmitError(Exception):
    """The submission was not accepted. ``retryable`` says whether trying later may help."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable


@dataclass
class SubmitResponse:
    status: int
    body: Any
    attempts: int


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirected POST would be replayed as a GET without its body: report it instead."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001, ANN201, PLR0913
        return None


def submissions_endpoint(url: str) -> str:
    """``https://host[/prefix]`` -> ``https://host[/prefix]/api/v1/submissions/``; refuse tokens over plain http.

    Plain http is allowed only to loopback addresses (a local development server), so that a token
    never crosses a network in clear.
    """
    parsed = urllib.parse.urlsplit(url.strip())
    if parsed.scheme not in {"http", "https"} or not parsed.hostname:
        raise SubmitError(f"--url must be an http(s) URL such as https://gpuatlas.example, got {url!r}")
    if parsed.scheme == "http" and not _is_loopback(parsed.hostname):
        raise SubmitError(
            f"refusing to send the API token over plain http to {parsed.hostname}; use https "
            "(plain http is allowed only to localhost)"
        )
    path = parsed.path.rstrip("/")
    if not path.endswith(SUBMISSIONS_PATH.rstrip("/")):
        path += SUBMISSIONS_PATH.rstrip("/")
    return urllib.parse.urlunsplit((parsed.scheme, parsed.netloc, path + "/", "", ""))


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _describe(status: int, raw: bytes) -> str:
    """The server's reasons, field by field when it sends DRF-style JSON errors."""
    text = raw[:4000].decode("utf-8", "replace").strip()
    try:
        body = json.loads(text)
    except ValueError:
        return text[:500] or "(empty body)"
    lines: list[str] = []

    def walk(value: Any, where: str) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(inner, f"{where}.{key}" if where else str(key))
        elif isinstance(value, list) and all(isinstance(item, str) for item in value):
            lines.append(f"{where or 'error'}: {'; '.join(value)}")
        elif isinstance(value, list):
            for position, inner in enumerate(value):
                walk(inner, f"{where}[{position}]")
        else:
            lines.append(f"{where or 'error'}: {value}")

    walk(body, "")
    return "\n  ".join(lines[:20]) or text[:500]


def _retry_after(headers: Any) -> float | None:
    value = headers.get("Retry-After") if headers is not None else None
    try:
        return min(float(value), _MAX_RETRY_AFTER_S) if value is not None else None
    except ValueError:
        return None


def submission_post(
    *,
    body: bytes,
    url: str,
    token: str,
    run_uuid: str | None = None,
    attempts: int = 5,
    backoff_s: float = 2.0,
    timeout_s: float = 60.0,
    sleep: Callable[[float], None] = time.sleep,
    log: Callable[[str], None] = lambda _line: None,
    dry_run: bool = False,
) -> SubmitResponse:
    """POST ``body`` (a submission's JSON) with ``Authorization: Token``; retry 5xx, 429 and dropped connections.

    ``dry_run``: to the server's dry run, which answers the verdict the run would get and stores nothing.

    Waits ``backoff_s * 2**n`` between attempts (or the server's Retry-After). A 4xx other than
    408/425/429 raises :class:`SubmitError` at once with the server's reasons: sending the same body
    again cannot fix it.
    """
    if not token:
        raise SubmitError("no API token: pass --token or set GPUATLAS_TOKEN (create one on your account page)")
    endpoint = submissions_endpoint(url) + (DRY_RUN_PATH if dry_run else "")
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "Authorization": f"Token {token}",
        "User-Agent": f"{CLIENT_NAME}/{__version__}",
    }
    if run_uuid and not dry_run:
        headers["Idempotency-Key"] = run_uuid
    opener = urllib.request.build_opener(_NoRedirect)
    last_problem = "no attempt made"
    for attempt in range(1, max(1, attempts) + 1):
        request = urllib.request.Request(endpoint, data=body, headers=headers, method="POST")  # noqa: S310
        wait = backoff_s * 2 ** (attempt - 1)
        try:
            with opener.open(request, timeout=timeout_s) as response:
                raw = response.read(_MAX_BODY)
                try:
                    parsed: Any = json.loads(raw) if raw else None
                except ValueError:
                    parsed = raw[:500].decode("utf-8", "replace")
                return SubmitResponse(status=response.status, body=parsed, attempts=attempt)
        except urllib.error.HTTPError as error:
            raw = error.read(_MAX_BODY) if error.fp is not None else b""
            if 300 <= error.code < 400:
                raise SubmitError(
                    f"the server redirected the submission (HTTP {error.code}) to {error.headers.get('Location')}; "
                    "use that address as --url",
                    status=error.code,
                ) from None
            if error.code not in RETRYABLE_STATUS:
                hint = " (check the token)" if error.code in {401, 403} else ""
                raise SubmitError(
                    f"the server refused the submission (HTTP {error.code}){hint}:\n  {_describe(error.code, raw)}",
                    status=error.code,
                ) from None
            last_problem = f"HTTP {error.code}: {_describe(error.code, raw)[:200]}"
            wait = _retry_after(error.headers) or wait
        except (urllib.error.URLError, HTTPException, ConnectionError, TimeoutError, OSError) as error:
            reason = getattr(error, "reason", error)
            last_problem = f"connection problem: {reason}"
        if attempt < attempts:
            log(f"attempt {attempt}/{attempts} failed ({last_problem}); retrying in {wait:g} s")
            sleep(wait)
    raise SubmitError(f"gave up after {attempts} attempts; last: {last_problem}", retryable=True)
