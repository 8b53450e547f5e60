"""Where a webhook may go: public addresses only, checked after DNS resolution.

A webhook URL is the user's, and the server calls it: without a check, anyone could make the
server call its own private network (a database, the cloud's metadata service at 169.254.169.254,
an admin port on 127.0.0.1). So every address the name resolves to must be public (not private,
loopback, link-local, multicast, reserved or unspecified; an IPv4-mapped IPv6 address counts as
its IPv4 address), when the watch is created and again at every delivery. The delivery then
connects to the address it checked (``WebhookTarget.address``), never resolving the name again,
so that a name that answers a public address to the check and a private one a moment later (DNS
rebinding) gains nothing; TLS still verifies the certificate against the name.

``settings.WATCH_WEBHOOK_ALLOWED_NETWORKS`` lets a deployment reach receivers on networks of its
own (empty by default).
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings
from django.utils.translation import gettext as _

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
SCHEMES = {"http": 80, "https": 443}


class WebhookRefused(ValueError):
    """A webhook URL the server will not call; the message says why, for the user. ``transient``:
    a name that does not resolve now may later; an address that is not allowed never will be."""

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


@dataclass(frozen=True)
class WebhookTarget:
    """A checked webhook URL: the address to connect to and what to say to it."""

    scheme: str
    host: str  # the name (or address) in the URL: the Host header and the TLS server name
    port: int
    path: str  # path and query string
    address: str  # the checked address the connection goes to

    @property
    def host_header(self) -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return shown if self.port == SCHEMES[self.scheme] else f"{shown}:{self.port}"


def address_is_public(address: IpAddress) -> bool:
    """True for an address on the public internet; False for private, loopback, link-local,
    multicast, reserved, unspecified and shared (carrier-grade NAT) addresses."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_global and not (
        address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
    )


def address_allowed(address: IpAddress) -> bool:
    """Public, or in a network the deployment allows (WATCH_WEBHOOK_ALLOWED_NETWORKS)."""
    allowed = settings.WATCH_WEBHOOK_ALLOWED_NETWORKS
    return address_is_public(address) or any(address in network for network in allowed)


def _resolve(host: str, port: int) -> list[IpAddress]:
    try:
        literal = ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        return [literal]
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise WebhookRefused(_("the host name %(host)s does not resolve") % {"host": host}, transient=True) from None
    # A scope id (fe80::1%eth0) is not part of the address.
    return list(dict.fromkeys(ipaddress.ip_address(str(entry[4][0]).split("%")[0]) for entry in found))


def webhook_target(url: str) -> WebhookTarget:
    """The URL checked, resolved and pinned to one allowed address; WebhookRefused says why not.

    Every address the name resolves to must be allowed: a name with one private address among
    public ones is refused, since the connection could not be made to choose.
    """
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        raise WebhookRefused(_("not a valid URL")) from None
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise WebhookRefused(_("the URL must start with https:// or http://"))
    if parts.username is not None or parts.password is not None:
        raise WebhookRefused(_("a user name or password in the URL is not allowed"))
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise WebhookRefused(_("the URL has no host"))
    port = port or SCHEMES[scheme]
    addresses = _resolve(host, port)
    refused = [address for address in addresses if not address_allowed(address)]
    if refused or not addresses:
        raise WebhookRefused(
            _("%(host)s is a private, loopback, link-local, multicast or reserved address (%(address)s): not allowed")
            % {"host": host, "address": refused[0] if refused else "-"}
        )
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return WebhookTarget(scheme=scheme, host=host, port=port, path=path, address=str(addresses[0]))
