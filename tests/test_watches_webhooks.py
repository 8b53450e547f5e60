"""Webhooks of price watches: never to a private, loopback, link-local, multicast or reserved
address, checked after DNS resolution at creation and again at delivery, connecting to the address
checked; a receiver that hangs or fails costs the price import nothing; retries back off; a
webhook failing delivery after delivery is disabled.

No test here sends anything to a private address: the refusal comes before any connection, and
names are resolved by a stand-in for ``socket.getaddrinfo``.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time

import pytest
from celery.exceptions import Retry
from django.test import Client
from django.urls import reverse
from werkzeug import Response

from gpuatlas import followups
from tests.factories import UserFactory, token_client
from tests.test_watches import T1, T2, T3, T4, h100_watch, price_import
from tests.world import PRICE_WORLD, world_build
from watches import webhook_address, webhook_send
from watches.models import Crossing, Delivery, Watch
from watches.services.delivery import delivery_attempt
from watches.tasks import delivery_send, retry_countdown
from watches.webhook_address import WebhookRefused, address_is_public, webhook_target

pytestmark = pytest.mark.django_db

PUBLIC = "93.184.216.34"  # never connected to: every test that names it stands in for the connection
REFUSED_URLS = [
    "http://127.0.0.1/hook",
    "http://127.1.2.3:8080/hook",
    "http://localhost/hook",
    "http://10.0.0.1/hook",
    "http://10.255.255.254/hook",
    "https://172.16.0.5/hook",
    "http://192.168.1.1/hook",
    "http://169.254.169.254/latest/meta-data/",
    "http://[::1]/hook",
    "http://[fe80::1]/hook",
    "http://[fd00::1]/hook",
    "http://[::ffff:127.0.0.1]/hook",
    "http://[::ffff:10.0.0.1]/hook",
    "http://0.0.0.0/hook",
    "http://224.0.0.1/hook",
    "http://240.0.0.1/hook",
    "http://100.64.0.1/hook",
    "http://2130706433/hook",  # 127.0.0.1 as one number: resolves to loopback
]


@pytest.fixture
def fake_dns(monkeypatch):
    """Names resolve to what the test says; the count of look-ups is kept."""
    answers: dict[str, list[str]] = {}
    lookups: list[str] = []
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if host in answers:
            lookups.append(host)
            return [
                (socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port))
                for a in answers[host]
            ]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(webhook_address.socket, "getaddrinfo", getaddrinfo)
    return answers, lookups


@pytest.mark.parametrize("url", REFUSED_URLS)
def test_webhooks_to_private_and_loopback_addresses_are_refused(url, settings):
    settings.WATCH_WEBHOOK_ALLOWED_NETWORKS = []
    with pytest.raises(WebhookRefused, match="not allowed"):
        webhook_target(url)


@pytest.mark.parametrize("address", ["127.0.0.1", "10.1.2.3", "169.254.169.254", "::1", "192.168.0.10", "fc00::5"])
def test_names_resolving_to_private_addresses_are_refused(address, fake_dns, settings):
    settings.WATCH_WEBHOOK_ALLOWED_NETWORKS = []
    answers, _lookups = fake_dns
    answers["hooks.attacker.example"] = [address]
    with pytest.raises(WebhookRefused, match="not allowed"):
        webhook_target("https://hooks.attacker.example/x")
    # One private address among public ones is enough to refuse the name.
    answers["hooks.attacker.example"] = [PUBLIC, address]
    with pytest.raises(WebhookRefused, match="not allowed"):
        webhook_target("https://hooks.attacker.example/x")


def test_a_public_name_is_pinned_to_the_address_checked(fake_dns):
    answers, _lookups = fake_dns
    answers["hooks.example.com"] = [PUBLIC]
    target = webhook_target("https://hooks.example.com:8443/in?x=1")
    assert (target.address, target.host_header, target.path) == (PUBLIC, "hooks.example.com:8443", "/in?x=1")
    assert address_is_public(ipaddress.ip_address("8.8.8.8"))
    assert not address_is_public(ipaddress.ip_address("::ffff:169.254.169.254"))


@pytest.mark.parametrize(
    "url", ["ftp://example.com/x", "http://user:pw@example.com/x", "http:///nohost", "not a url", "http://[::1/x"]
)
def test_malformed_webhook_urls_are_refused(url):
    with pytest.raises(WebhookRefused):
        webhook_target(url)


def test_the_api_answers_400_naming_webhook_url_for_private_targets(fake_dns, settings):
    settings.WATCH_WEBHOOK_ALLOWED_NETWORKS = []
    answers, _ = fake_dns
    answers["internal.example"] = ["10.0.0.8"]
    world_build(rows=PRICE_WORLD)
    client = token_client(UserFactory())
    for url in ("http://127.0.0.1:9/x", "http://10.0.0.1/x", "http://169.254.169.254/", "http://internal.example/x"):
        response = client.post(
            "/api/v1/watches/",
            {"kind": "price", "gpu": "h100-sxm5-80-gb", "threshold": "2", "webhook_url": url},
            content_type="application/json",
        )
        assert response.status_code == 400, url
        assert list(response.json()["errors"]) == ["webhook_url"], url
    assert not Watch.objects.exists()


class _FakePool:
    """Stands in for a urllib3 pool: records where it would connect, answers 200, sends nothing."""

    made: list[tuple[str, int, dict]] = []

    def __init__(self, host, port, **kwargs):
        self.host, self.port = host, port

    def urlopen(self, method, url, *, body, headers, **kwargs):
        _FakePool.made.append((self.host, self.port, dict(headers)))

        class Answer:
            status = 200

            def read(self, amount):
                return b""

            def release_conn(self):
                pass

        return Answer()

    def close(self):
        pass


def test_delivery_checks_the_name_again_and_connects_to_the_address_checked(tmp_path, fake_dns, monkeypatch):
    """A name that turns private after the watch was created (DNS rebinding) is refused at delivery;
    while it is public, the connection goes to the address the check saw, with the name as Host."""
    answers, lookups = fake_dns
    answers["hooks.example.com"] = [PUBLIC]
    monkeypatch.setattr(webhook_send.urllib3, "HTTPSConnectionPool", _FakePool)
    monkeypatch.setattr(webhook_send.urllib3, "HTTPConnectionPool", _FakePool)
    _FakePool.made = []
    world_build(rows=PRICE_WORLD)
    price_import(tmp_path, [("h100.1x", "H100-SXM", "2.49")], T1)
    h100_watch(UserFactory(), webhook_url="https://hooks.example.com/in", email="")

    answers["hooks.example.com"] = ["10.0.0.7"]
    lookups.clear()
    price_import(tmp_path, [("h100.1x", "H100-SXM", "2.19")], T2)
    refused = Delivery.objects.get()
    assert refused.status == "failed" and "not allowed" in refused.error and _FakePool.made == []
    assert lookups == ["hooks.example.com"]

    answers["hooks.example.com"] = [PUBLIC]
    price_import(tmp_path, [("h100.1x", "H100-SXM", "2.59")], T3)
    price_import(tmp_path, [("h100.1x", "H100-SXM", "2.09")], T4)
    sent = Delivery.objects.filter(status="sent").get()
    assert sent.attempts == 1
    assert [(host, port, headers["Host"]) for host, port, headers in _FakePool.made] == [
        (PUBLIC, 443, "hooks.example.com")
    ]


@pytest.fixture
def deliveries_queued(monkeypatch):
    """A broker's view: the evaluation runs after the import, each delivery waits in the queue."""
    queued: list[int] = []
    in_process = followups.followup_run

    def run(name, *, countdown=0, **kwargs):
        if name == "watches.tasks.delivery_send":
            queued.append(kwargs["delivery_id"])
            return True
        return in_process(name, countdown=countdown, **kwargs)

    monkeypatch.setattr(followups, "followup_run", run)
    return queued


@pytest.fixture(scope="session")
def httpserver_listen_address():
    return ("127.0.0.1", 0)


@pytest.mark.parametrize("fault", ["hangs", "fails"])
def test_a_webhook_that_hangs_or_fails_costs_the_import_nothing(
    fault, tmp_path, httpserver, deliveries_queued, settings
):
    settings.WATCH_WEBHOOK_ALLOWED_NETWORKS = [ipaddress.ip_network("127.0.0.1/32")]
    settings.WATCH_WEBHOOK_TIMEOUT_S = 1
    released = threading.Event()
    if fault == "hangs":
        # Held until the test ends (3 s at most), so that the server is free again for the next test.
        def late(request):  # type: ignore[no-untyped-def]
            released.wait(3)
            return Response("late")

        httpserver.expect_request("/hook").respond_with_handler(late)
    else:
        httpserver.expect_request("/hook").respond_with_data("broken", status=500)
    world_build(rows=PRICE_WORLD)
    price_import(tmp_path, [("h100.1x", "H100-SXM", "2.49")], T1)
    h100_watch(UserFactory(), webhook_url=f"http://127.0.0.1:{httpserver.port}/hook", email="")

    reverse("watches:new")  # the URLconf loaded (once a process) before the import is timed
    started = time.monotonic()
    summary = price_import(tmp_path, [("h100.1x", "H100-SXM", "2.19")], T2)
    import_seconds = time.monotonic() - started
    # The import is written and evaluated; its webhook waits as a task of its own, not yet called.
    assert summary.observations_added == 1 and Crossing.objects.count() == 1
    assert len(deliveries_queued) == 1 and httpserver.log == []

    started = time.monotonic()
    assert delivery_send.apply(kwargs={"delivery_id": deliveries_queued[0]}).get() == "failed"
    delivery_seconds = time.monotonic() - started
    delivery = Delivery.objects.get()
    assert delivery.attempts == 1 and delivery.status == "failed"
    if fault == "hangs":
        assert delivery.error == "timed out" and 1 <= delivery_seconds < 3
    else:
        assert (delivery.response_status, delivery.error) == (500, "HTTP 500")
    assert import_seconds < 3  # never waited for the receiver (it hangs 3 s)
    released.set()


def test_a_retryable_failure_is_retried_with_exponential_backoff(tmp_path, monkeypatch, settings):
    settings.WATCH_WEBHOOK_BACKOFF_S = 30
    settings.WATCH_WEBHOOK_RETRIES = 3
    assert [retry_countdown(n) for n in range(8)] == [30, 60, 120, 240, 480, 960, 1920, 3600]
    world_build(rows=PRICE_WORLD)
    price_import(tmp_path, [("h100.1x", "H100-SXM", "2.49")], T1)
    watch, _ = h100_watch(UserFactory(), email="")
    crossing = Crossing.objects.create(
        watch=watch, occurred_at=T2, value=2.0, threshold=watch.threshold, currency="USD"
    )
    delivery = Delivery.objects.create(crossing=crossing, channel="webhook", body="{}")
    Watch.objects.filter(pk=watch.pk).update(webhook_url="http://hooks.example.com/x", webhook_secret="s")
    monkeypatch.setattr(
        "watches.services.delivery.webhook_target",
        lambda url: (_ for _ in ()).throw(WebhookRefused("down", transient=True)),
    )
    asked: list[int] = []
    monkeypatch.setattr(delivery_send, "retry", lambda countdown: asked.append(countdown) or Retry())
    for retries in range(3):
        delivery_send.push_request(retries=retries, is_eager=False)
        try:
            with pytest.raises(Retry):
                delivery_send.run(delivery_id=delivery.pk)
        finally:
            delivery_send.pop_request()
    assert asked == [30, 60, 120]
    delivery_send.push_request(retries=3, is_eager=False)
    try:
        assert delivery_send.run(delivery_id=delivery.pk) == "failed"
    finally:
        delivery_send.pop_request()
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("failed", 4)
    assert delivery_attempt(delivery_id=delivery.pk).value == "nothing"  # given up: never sent again


def test_a_webhook_failing_delivery_after_delivery_is_disabled(tmp_path, httpserver, settings, client):
    settings.WATCH_WEBHOOK_ALLOWED_NETWORKS = [ipaddress.ip_network("127.0.0.1/32")]
    settings.WATCH_WEBHOOK_DISABLE_AFTER = 2
    httpserver.expect_request("/hook").respond_with_data("no", status=503)
    world_build(rows=PRICE_WORLD)
    price_import(tmp_path, [("h100.1x", "H100-SXM", "2.49")], T1)
    user = UserFactory()
    watch, _ = h100_watch(user, webhook_url=f"http://127.0.0.1:{httpserver.port}/hook")
    for when, price in zip((T2, T3, T4), ("2.19", "2.59", "2.09"), strict=True):
        price_import(tmp_path, [("h100.1x", "H100-SXM", price)], when)
    watch.refresh_from_db()
    assert watch.webhook_failures == 2 and watch.webhook_disabled_at is not None
    assert len(httpserver.log) == 2
    price_import(tmp_path, [("h100.1x", "H100-SXM", "2.69")], T4.replace(day=5))
    price_import(tmp_path, [("h100.1x", "H100-SXM", "1.99")], T4.replace(day=6))
    # Disabled: no more calls and no webhook delivery; email and feed go on.
    assert len(httpserver.log) == 2
    assert Crossing.objects.count() == 3
    assert Delivery.objects.filter(channel="email", status="sent").count() == 3
    page = Client()
    page.force_login(user)
    assert "disabled after repeated failures" in page.get("/accounts/").content.decode()


def test_webhook_secret_is_shown_once(tmp_path):
    world_build(rows=PRICE_WORLD)
    price_import(tmp_path, [("h100.1x", "H100-SXM", "2.49")], T1)
    user = UserFactory()
    client = token_client(user)
    created = client.post(
        "/api/v1/watches/",
        {"kind": "price", "gpu": "h100-sxm5-80-gb", "threshold": "2.3", "webhook_url": f"https://{PUBLIC}/hook"},
        content_type="application/json",
    )
    assert created.status_code == 201, created.json()
    secret = created.json()["webhook_secret"]
    assert len(secret) == 64
    listed = client.get("/api/v1/watches/").content.decode()
    one = client.get(f"/api/v1/watches/{created.json()['id']}/").content.decode()
    page = Client()
    page.force_login(user)
    account = page.get("/accounts/").content.decode()
    for shown in (listed, one, account):
        assert secret not in shown
