"""Price watches end to end: a price import that lowers an H100 offer under a watch's threshold
alerts once by email, by a signed webhook (a real local HTTP server) and in the feed; an import
that changes nothing alerts nobody; a watch alerts again only after its figure went back."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import ipaddress
import json
from decimal import Decimal

import pytest
from django.core import mail
from django.test import Client
from werkzeug import Response

from catalog.models import Gpu
from catalog.services.prices import price_import_file
from tests.factories import CURATED_CSV_HEADER, UserFactory
from tests.world import PRICE_WORLD, world_build
from watches.models import Crossing, Delivery, Watch
from watches.services.watches import watch_create
from watches.validation import WatchSpec
from watches.webhook_send import SIGNATURE_HEADER

pytestmark = pytest.mark.django_db

T1 = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
T2 = dt.datetime(2026, 11, 2, tzinfo=dt.UTC)
T3 = dt.datetime(2026, 11, 3, tzinfo=dt.UTC)
T4 = dt.datetime(2026, 11, 4, tzinfo=dt.UTC)


@pytest.fixture(scope="session")
def httpserver_listen_address():
    return ("127.0.0.1", 0)


@pytest.fixture
def loopback_webhooks(settings):
    """A webhook receiver on this machine (the test's HTTP server): loopback allowed for the test."""
    settings.WATCH_WEBHOOK_ALLOWED_NETWORKS = [ipaddress.ip_network("127.0.0.1/32")]


def curated_file(tmp_path, rows: list[tuple[str, str, str]], when: dt.datetime, *, name: str = "cloud.csv"):
    """A curated price file of one provider read at ``when``: (instance type, GPU name, price per hour) rows."""
    path = tmp_path / name
    lines = [
        f"examplecloud,Example Cloud,{instance},us-east,{gpu},80,1,8,64,{price},gpu,,USD,{when.date()},https://example.org/prices"
        for instance, gpu, price in rows
    ]
    path.write_text(CURATED_CSV_HEADER + "\n".join(lines) + "\n", encoding="utf-8")
    return path


def price_import(tmp_path, rows, when):
    summary = price_import_file(path=curated_file(tmp_path, rows, when))
    assert summary.ok, summary.error
    return summary


def h100_watch(user, *, threshold="2.30", webhook_url="", email="alerts@example.org") -> tuple[Watch, str]:
    return watch_create(
        user=user,
        spec=WatchSpec(
            kind="price", threshold=Decimal(threshold), gpu="h100-sxm5-80-gb", email=email, webhook_url=webhook_url
        ),
    )


def test_a_price_cut_under_the_threshold_alerts_once_by_email_webhook_and_feed(
    tmp_path, httpserver, loopback_webhooks, client
):
    world_build(rows=PRICE_WORLD)
    price_import(tmp_path, [("h100.1x", "H100-SXM", "2.49"), ("a100.1x", "A100-80GB", "1.50")], T1)
    user = UserFactory()
    httpserver.expect_request("/hook", method="POST").respond_with_data("ok")
    watch, secret = h100_watch(user, webhook_url=f"http://127.0.0.1:{httpserver.port}/hook")
    assert (watch.met, watch.last_value) == (False, 2.49)
    assert len(secret) == 64

    price_import(tmp_path, [("h100.1x", "H100-SXM", "2.19"), ("a100.1x", "A100-80GB", "1.50")], T2)

    crossing = Crossing.objects.get()
    assert (crossing.watch_id, crossing.value, crossing.cause["instance_type"]) == (watch.pk, 2.19, "h100.1x")
    assert crossing.offer is not None and crossing.offer.instance_type == "h100.1x"
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["alerts@example.org"]
    assert "2.19" in mail.outbox[0].subject and "H100 SXM5 80 GB" in mail.outbox[0].subject
    assert len(httpserver.log) == 1
    request, _response = httpserver.log[0]
    expected = "sha256=" + hmac.new(secret.encode(), request.get_data(), hashlib.sha256).hexdigest()
    assert hmac.compare_digest(request.headers[SIGNATURE_HEADER], expected)
    payload = json.loads(request.get_data())
    assert (payload["watch"]["id"], payload["value"], payload["cause"]["gpu"]) == (watch.pk, 2.19, "h100-sxm5-80-gb")
    assert set(Delivery.objects.values_list("channel", "status")) == {("email", "sent"), ("webhook", "sent")}
    feed = client.get(f"/watches/feed/{watch.feed_token}/")
    assert feed.status_code == 200 and feed["Content-Type"].startswith("application/atom+xml")
    assert feed.content.count(b"<entry>") == 1 and b"2.19" in feed.content

    # The same prices again, a day later: no crossing, no email, no webhook, no feed entry.
    price_import(tmp_path, [("h100.1x", "H100-SXM", "2.19"), ("a100.1x", "A100-80GB", "1.50")], T3)
    assert Crossing.objects.count() == 1 and len(mail.outbox) == 1 and len(httpserver.log) == 1
    assert client.get(f"/watches/feed/{watch.feed_token}/").content.count(b"<entry>") == 1


def test_a_watch_alerts_again_only_after_its_figure_went_back_over(tmp_path):
    world_build(rows=PRICE_WORLD)
    price_import(tmp_path, [("h100.1x", "H100-SXM", "2.49")], T1)
    watch, _secret = h100_watch(UserFactory())
    for when, price in ((T2, "2.19"), (T3, "2.09"), (T4, "2.59")):
        price_import(tmp_path, [("h100.1x", "H100-SXM", price)], when)
    assert Crossing.objects.count() == 1  # 2.19 crossed; 2.09 stayed under; 2.59 went back over
    watch.refresh_from_db()
    assert (watch.met, watch.last_value) == (False, 2.59)
    price_import(tmp_path, [("h100.1x", "H100-SXM", "2.29")], T4 + dt.timedelta(days=1))
    assert list(Crossing.objects.order_by("occurred_at").values_list("value", flat=True)) == [2.19, 2.29]
    assert len(mail.outbox) == 2


def test_a_watch_created_under_its_threshold_does_not_alert_until_the_next_crossing(tmp_path):
    world_build(rows=PRICE_WORLD)
    price_import(tmp_path, [("h100.1x", "H100-SXM", "2.19")], T1)
    watch, _secret = h100_watch(UserFactory())
    assert watch.met
    price_import(tmp_path, [("h100.1x", "H100-SXM", "2.09")], T2)
    assert Crossing.objects.count() == 0 and mail.outbox == []


def test_the_evaluation_reads_only_the_watches_of_gpus_whose_offers_changed(tmp_path, monkeypatch):
    world_build(rows=PRICE_WORLD)
    price_import(tmp_path, [("h100.1x", "H100-SXM", "2.49"), ("a100.1x", "A100-80GB", "1.50")], T1)
    user = UserFactory()
    h100, _ = h100_watch(user)
    a100, _ = watch_create(user=user, spec=WatchSpec(kind="price", threshold=Decimal("1.0"), gpu="a100-sxm4-80-gb"))
    evaluated: list[list[int]] = []
    import watches.services.evaluation as evaluation

    real = evaluation.watch_readings
    monkeypatch.setattr(
        evaluation,
        "watch_readings",
        lambda *, watches, fresh, shared: (
            evaluated.append([w.pk for w in watches]) or real(watches=watches, fresh=fresh, shared=shared)
        ),
    )
    price_import(tmp_path, [("h100.1x", "H100-SXM", "2.39"), ("a100.1x", "A100-80GB", "1.50")], T2)
    assert evaluated == [[h100.pk]]
    evaluated.clear()
    price_import(tmp_path, [("h100.1x", "H100-SXM", "2.39"), ("a100.1x", "A100-80GB", "1.50")], T3)
    assert evaluated == []  # nothing changed: no watch read
    assert a100.pk not in {w for batch in evaluated for w in batch}


def test_price_watch_filters_count_spot_provider_and_region(tmp_path):
    world_build(rows=PRICE_WORLD)
    path = tmp_path / "mixed.csv"
    path.write_text(
        CURATED_CSV_HEADER
        + "examplecloud,Example Cloud,h100.8x,eu-west,H100-SXM,80,8,8,64,16.00,,,USD,2026-11-01,https://example.org/p\n"
        + "examplecloud,Example Cloud,h100.1x,us-east,H100-SXM,80,1,8,64,2.49,,1.20,USD,2026-11-01,https://example.org/p\n"
        + "othercloud,Other Cloud,o.1x,us-west,H100-SXM,80,1,8,64,2.20,,,USD,2026-11-01,https://example.org/p\n",
        encoding="utf-8",
    )
    assert price_import_file(path=path, observed_at=T1).ok
    user = UserFactory()

    def value(**spec):
        watch, _ = watch_create(
            user=user, spec=WatchSpec(kind="price", threshold=Decimal("1"), gpu="h100-sxm5-80-gb", **spec)
        )
        return watch.last_value

    assert value() == 2.0  # the 8-GPU machine at 16.00 / 8
    assert value(gpu_count=1) == 2.2
    assert value(gpu_count=1, provider="examplecloud") == 2.49
    assert value(spot=True) == 1.2
    assert value(region="WEST", gpu_count=1) == 2.2
    assert value(region="nowhere") is None


def test_the_gpu_feed_lists_each_price_cut_and_needs_no_account(tmp_path, client):
    world_build(rows=PRICE_WORLD)
    price_import(tmp_path, [("h100.1x", "H100-SXM", "2.49")], T1)
    price_import(tmp_path, [("h100.1x", "H100-SXM", "2.19")], T2)
    price_import(tmp_path, [("h100.1x", "H100-SXM", "2.59")], T3)  # a rise: no entry
    feed = client.get("/gpus/h100-sxm5-80-gb/feed/")
    assert feed.status_code == 200
    assert feed.content.count(b"<entry>") == 1 and b"2.49 \xe2\x86\x92 2.19" in feed.content
    assert client.get("/gpus/no-such-gpu/feed/").status_code == 404


def test_a_feed_token_is_needed_and_unguessable(tmp_path, client):
    world_build(rows=PRICE_WORLD)
    watch, _ = h100_watch(UserFactory())
    assert len(watch.feed_token) >= 43
    assert client.get("/watches/feed/not-a-token/").status_code == 404
    assert Gpu.objects.filter(slug="h100-sxm5-80-gb").exists()
    assert client.get(f"/watches/feed/{watch.feed_token}/").status_code == 200


def test_webhook_redirects_are_not_followed(tmp_path, httpserver, loopback_webhooks):
    world_build(rows=PRICE_WORLD)
    price_import(tmp_path, [("h100.1x", "H100-SXM", "2.49")], T1)
    httpserver.expect_request("/hook").respond_with_response(
        Response(status=302, headers={"Location": f"http://127.0.0.1:{httpserver.port}/elsewhere"})
    )
    h100_watch(UserFactory(), webhook_url=f"http://127.0.0.1:{httpserver.port}/hook", email="")
    price_import(tmp_path, [("h100.1x", "H100-SXM", "2.19")], T2)
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.response_status, delivery.error) == ("failed", 302, "redirects are not followed")
    assert [request.path for request, _ in httpserver.log] == ["/hook"]


def test_the_watch_page_and_account_page_show_the_watch(tmp_path):
    world_build(rows=PRICE_WORLD)
    price_import(tmp_path, [("h100.1x", "H100-SXM", "2.49")], T1)
    user = UserFactory()
    client = Client()
    client.force_login(user)
    page = client.get("/watches/new/?gpu=h100-sxm5-80-gb")
    assert page.status_code == 200 and b"2.49" in page.content
    created = client.post(
        "/watches/new/",
        {"kind": "price", "gpu": "h100-sxm5-80-gb", "threshold": "2.30", "webhook_url": "", "email": ""},
    )
    assert created.status_code == 200 and b"Atom" in created.content
    watch = Watch.objects.get(user=user)
    account = client.get("/accounts/")
    assert b"H100 SXM5 80 GB" in account.content and b"2.49" in account.content
    assert watch.feed_token.encode() in account.content
    assert b"at most 2.3 USD per GPU-hour" in account.content
