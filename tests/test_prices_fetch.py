"""fetch_prices against a real local HTTP server serving real catalogue files from the bundle.

Cases: a good file, a file that did not change (ETag / If-None-Match -> 304), a 404, a
timeout, a truncated file, a changed column order, a 5xx answer retried; one cloud's failure
never stops another; the site then shows the fetched prices as current.
"""

from __future__ import annotations

import csv
import io
import time

import pytest
from django.core.management import CommandError, call_command
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from catalog.models import Offer, PriceFetch, PriceSnapshot
from catalog.selectors.prices import gpu_rent_prices, price_status
from catalog.services.prices import BUNDLED_PRICES_DIR
from catalog.services.prices.fetch import prices_fetch
from tests.world import PRICE_WORLD, world_build

pytestmark = pytest.mark.django_db

LAMBDA = (BUNDLED_PRICES_DIR / "skypilot-catalog/v8/lambda/vms.csv").read_bytes()
VERDA = (BUNDLED_PRICES_DIR / "skypilot-catalog/v8/verda/vms.csv").read_bytes()


@pytest.fixture
def fetch_settings(settings, httpserver: HTTPServer, tmp_path):
    settings.PRICE_FETCH_BASE_URL = httpserver.url_for("/catalogs/v8")
    settings.PRICE_FETCH_DIR = str(tmp_path / "fetched")
    settings.PRICE_FETCH_TIMEOUT_SECONDS = 1
    settings.PRICE_FETCH_RETRIES = 2
    settings.PRICE_FETCH_BACKOFF_SECONDS = 0
    return settings


def serve_with_etag(httpserver: HTTPServer, path: str, body: bytes, etag: str) -> None:
    def handler(request: Request) -> Response:
        if request.headers.get("If-None-Match") == etag:
            return Response(status=304, headers={"ETag": etag})
        return Response(body, status=200, headers={"ETag": etag, "Content-Type": "text/plain"})

    httpserver.expect_request(path).respond_with_handler(handler)


def reorder_columns(body: bytes) -> bytes:
    rows = list(csv.reader(io.StringIO(body.decode(), newline="")))
    order = list(reversed(range(len(rows[0]))))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for row in rows:
        writer.writerow([row[i] for i in order])
    return out.getvalue().encode()


def test_fetch_imports_dates_by_fetch_time_and_a_second_fetch_is_not_modified(fetch_settings, httpserver):
    world_build(rows=PRICE_WORLD)
    serve_with_etag(httpserver, "/catalogs/v8/lambda/vms.csv", LAMBDA, '"lambda-v1"')
    [first] = prices_fetch(clouds=["lambda"])
    assert first.status == PriceFetch.Status.CHANGED and first.http_status == 200 and first.etag == '"lambda-v1"'
    offers = Offer.objects.filter(provider__slug="lambda")
    assert offers.count() == 374 and first.import_run is not None
    snapshot = PriceSnapshot.objects.get(provider__slug="lambda")
    assert snapshot.date_basis == PriceSnapshot.DateBasis.FETCHED and snapshot.observed_at == first.started_at

    [second] = prices_fetch(clouds=["lambda"])
    assert second.status == PriceFetch.Status.UNCHANGED and second.http_status == 304
    request = httpserver.log[-1][0]
    assert request.headers["If-None-Match"] == '"lambda-v1"'
    # Not modified: the offers are confirmed at the new fetch time, no price changes.
    assert set(offers.values_list("last_seen", flat=True)) == {second.started_at}
    assert offers.filter(available=True).count() == 374
    assert (
        Offer.objects.get(
            provider__slug="lambda", instance_type="gpu_8x_h100_sxm5", region="us-east-1"
        ).observations.count()
        == 1
    )
    # The site shows them as current, and the prices as live.
    assert gpu_rent_prices(rule="cheapest") and price_status().live


def test_failures_are_isolated_and_recorded(fetch_settings, httpserver):
    world_build(rows=PRICE_WORLD)
    httpserver.expect_request("/catalogs/v8/verda/vms.csv").respond_with_data(VERDA)
    httpserver.expect_request("/catalogs/v8/gone/vms.csv").respond_with_data("not found", status=404)
    truncated = LAMBDA[: len(LAMBDA) // 2]
    httpserver.expect_request("/catalogs/v8/lambda/vms.csv").respond_with_data(truncated)

    def slow(request: Request) -> Response:
        time.sleep(1.5)
        return Response(VERDA)

    httpserver.expect_request("/catalogs/v8/slow/vms.csv").respond_with_handler(slow)
    fetches = {f.source: f for f in prices_fetch(clouds=["gone", "lambda", "slow", "verda"])}
    assert fetches["gone"].status == PriceFetch.Status.FAILED and "HTTP 404" in fetches["gone"].error
    assert fetches["lambda"].status == PriceFetch.Status.FAILED and "cut off" in fetches["lambda"].error
    assert fetches["slow"].status == PriceFetch.Status.FAILED and "timed out" in fetches["slow"].error.lower()
    assert fetches["slow"].error.endswith("(after 3 attempts)")
    assert fetches["verda"].status == PriceFetch.Status.CHANGED
    # Nothing of the failed files was written; the good one was.
    assert not Offer.objects.filter(provider__slug="lambda").exists()
    assert Offer.objects.filter(provider__slug="verda").count() == 33
    assert PriceFetch.objects.count() == 4


def test_a_changed_column_order_imports_the_same_offers(fetch_settings, httpserver, tmp_path):
    world_build(rows=PRICE_WORLD)
    httpserver.expect_request("/catalogs/v8/verda/vms.csv").respond_with_data(reorder_columns(VERDA))
    [fetch] = prices_fetch(clouds=["verda"])
    assert fetch.status == PriceFetch.Status.CHANGED, fetch.error
    both = Offer.objects.filter(provider__slug="verda", instance_type="1B300.30V")
    assert sorted((o.is_spot, str(o.current_price_per_hour)) for o in both) == [
        (False, "6.990000"),
        (True, "2.447000"),
    ]


def test_a_server_error_is_retried_with_backoff(fetch_settings, httpserver):
    world_build(rows=PRICE_WORLD)
    httpserver.expect_ordered_request("/catalogs/v8/verda/vms.csv").respond_with_data("busy", status=503)
    httpserver.expect_ordered_request("/catalogs/v8/verda/vms.csv").respond_with_data(VERDA)
    [fetch] = prices_fetch(clouds=["verda"])
    assert fetch.status == PriceFetch.Status.CHANGED and fetch.attempts == 2


def test_command_reports_and_fails_on_a_failed_fetch(fetch_settings, httpserver, capsys):
    httpserver.expect_request("/catalogs/v8/gone/vms.csv").respond_with_data("", status=404)
    with pytest.raises(CommandError, match="1 of 1 fetch"):
        call_command("fetch_prices", "--cloud", "gone")
    assert "gone: failed (HTTP 404" in capsys.readouterr().out
    with pytest.raises(CommandError, match="not a catalogue folder"):
        call_command("fetch_prices", "--cloud", "../etc")


def test_providers_page_lists_the_last_fetch(fetch_settings, httpserver, client):
    world_build(rows=PRICE_WORLD)
    httpserver.expect_request("/catalogs/v8/verda/vms.csv").respond_with_data(VERDA)
    prices_fetch(clouds=["verda"])
    body = client.get("/providers/").content.decode()
    assert "verda" in body and "New content, imported" in body
