"""One signed webhook POST to a checked address (watches/webhook_address.py).

urllib3 (already installed as requests' transport) rather than requests: a connection pool can be
opened to the checked address while the Host header and TLS (server name and certificate check)
keep the URL's name, which requests does not let a caller choose. No redirect is followed (a 3xx
is a failure: the new location was never checked), no retry here (the Celery task retries with
backoff), and the timeout bounds the connection and each read.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

import urllib3

from watches.webhook_address import WebhookTarget

SIGNATURE_HEADER = "X-GPU-Atlas-Signature"
# Enough of the answer to show in the delivery log; the rest is never read.
RESPONSE_READ_BYTES = 1024


def signature(*, secret: str, body: bytes) -> str:
    """The signature header's value: ``sha256=`` and the hex HMAC-SHA256 of the body with the secret."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class WebhookAnswer:
    """How one POST went: the status the receiver answered, or the error that stopped it."""

    status: int | None
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


def webhook_post(
    *, target: WebhookTarget, body: bytes, secret: str, delivery_id: int, timeout_s: float
) -> WebhookAnswer:
    """POST ``body`` to ``target.address``, signed; the answer, never an exception."""
    headers = {
        "Host": target.host_header,
        "Content-Type": "application/json",
        "User-Agent": "GPU-Atlas-Webhook/1",
        SIGNATURE_HEADER: signature(secret=secret, body=body),
        "X-GPU-Atlas-Delivery": str(delivery_id),
    }
    timeout = urllib3.Timeout(connect=timeout_s, read=timeout_s)
    pool: urllib3.HTTPConnectionPool
    if target.scheme == "https":
        pool = urllib3.HTTPSConnectionPool(
            target.address,
            target.port,
            server_hostname=target.host,
            assert_hostname=target.host,
            cert_reqs="CERT_REQUIRED",
            timeout=timeout,
            retries=False,
            maxsize=1,
        )
    else:
        pool = urllib3.HTTPConnectionPool(target.address, target.port, timeout=timeout, retries=False, maxsize=1)
    try:
        response = pool.urlopen(
            "POST", target.path, body=body, headers=headers, redirect=False, retries=False, preload_content=False
        )
        try:
            response.read(RESPONSE_READ_BYTES)
        finally:
            response.release_conn()
    except urllib3.exceptions.HTTPError as exc:
        return WebhookAnswer(status=None, error=_error_text(exc))
    finally:
        pool.close()
    if 300 <= response.status < 400:
        return WebhookAnswer(status=response.status, error="redirects are not followed")
    return WebhookAnswer(
        status=response.status, error="" if 200 <= response.status < 300 else f"HTTP {response.status}"
    )


def _error_text(exc: Exception) -> str:
    if isinstance(exc, urllib3.exceptions.TimeoutError):
        return "timed out"
    reason = getattr(exc, "reason", None) or exc
    return f"{type(exc).__name__}: {reason}"[:500]
