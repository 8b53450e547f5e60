"""/api/v1/watches/ and the watch pages: token auth, clear 400s, a user sees and deletes only their
own watches, a cap per account, throttled creation (page and API)."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.factories import UserFactory, token_client
from tests.test_watches import T1, price_import
from tests.world import PRICE_WORLD, world_build
from watches.models import Watch

pytestmark = pytest.mark.django_db
PRICE = {"kind": "price", "gpu": "h100-sxm5-80-gb", "threshold": "2.30"}


@pytest.fixture
def priced(tmp_path):
    world_build(rows=PRICE_WORLD)
    price_import(tmp_path, [("h100.1x", "H100-SXM", "2.49")], T1)


def post(client, body):
    return client.post("/api/v1/watches/", body, content_type="application/json")


def test_create_list_and_delete_through_the_api(priced):
    client = token_client(UserFactory())
    created = post(client, PRICE)
    assert created.status_code == 201
    body = created.json()
    assert (body["gpu"], body["last_value"], body["met"], body["webhook_secret"]) == (
        "h100-sxm5-80-gb",
        2.49,
        False,
        "",
    )
    assert body["feed_url"].startswith("http://testserver/watches/feed/")
    assert [w["id"] for w in client.get("/api/v1/watches/").json()] == [body["id"]]
    assert client.delete(f"/api/v1/watches/{body['id']}/").status_code == 204
    assert client.get("/api/v1/watches/").json() == []


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"gpu": "no-such-gpu"}, "gpu"),
        ({"gpu": ""}, "gpu"),
        ({"threshold": "-1"}, "threshold"),
        ({"threshold": "abc"}, "threshold"),
        ({"threshold": -7.4e307}, "threshold"),
        ({"threshold": 1e300}, "threshold"),
        ({"kind": "stock"}, "kind"),
        ({"provider": "nobody"}, "provider"),
        ({"gpu_count": 0}, "gpu_count"),
        ({"currency": "EUR"}, "currency"),
        ({"email": "not-an-address"}, "email"),
        ({"metric": "perf_per_dollar"}, "metric"),
        ({"region": "x" * 65}, "region"),
        ({"region": "us\x00east"}, "region"),
        ({"webhook_url": "ftp://example.com/x"}, "webhook_url"),
    ],
)
def test_bad_fields_are_a_400_naming_the_field(priced, change, field):
    response = post(token_client(UserFactory()), {**PRICE, **change})
    assert response.status_code == 400
    assert field in response.json()["errors"], response.json()
    assert not Watch.objects.exists()


def test_the_schema_says_a_region_holds_no_nul_character(client):
    """A NUL in the region is refused (above); the schema says so, or a client that follows it is
    refused a request the schema allows."""
    schema = client.get("/api/v1/schema/", {"format": "json"}).json()
    region = schema["components"]["schemas"]["WatchCreate"]["properties"]["region"]
    patterns = [branch.get("pattern") for branch in region.get("oneOf", [region])]
    assert "^[^\\u0000]*$" in patterns, region


def test_a_user_sees_and_deletes_only_their_own_watches(priced):
    owner, other = token_client(UserFactory()), token_client(UserFactory())
    watch_id = post(owner, PRICE).json()["id"]
    assert other.get("/api/v1/watches/").json() == []
    assert other.get(f"/api/v1/watches/{watch_id}/").status_code == 404
    assert other.delete(f"/api/v1/watches/{watch_id}/").status_code == 404
    page = Client()
    page.force_login(UserFactory(username="intruder"))
    assert page.post(f"/watches/{watch_id}/delete/").status_code == 302
    assert b"h100" not in page.get("/accounts/").content.lower()
    assert Watch.objects.filter(pk=watch_id).exists()


def test_watches_need_an_account(priced):
    assert Client().get("/api/v1/watches/").status_code in (401, 403)
    assert post(Client(), PRICE).status_code in (401, 403)
    assert Client().get("/watches/new/?gpu=h100-sxm5-80-gb").status_code == 302


def test_an_account_holds_at_most_the_cap(priced, settings):
    settings.WATCHES_PER_ACCOUNT_MAX = 2
    client = token_client(UserFactory())
    assert [post(client, PRICE).status_code for _ in range(3)] == [201, 201, 400]
    assert "non_field_errors" in post(client, PRICE).json()["errors"]


def test_creation_is_throttled_on_the_api_and_the_page(priced, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {
        **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "watch_create": "2/hour"}}  # fmt: skip
    user = UserFactory()
    client = token_client(user)
    assert [post(client, PRICE).status_code for _ in range(3)] == [201, 201, 429]
    assert client.get("/api/v1/watches/").status_code == 200  # reads are not counted
    page = Client(REMOTE_ADDR="10.9.9.9")
    page.force_login(UserFactory())
    form = {"kind": "price", "gpu": "h100-sxm5-80-gb", "threshold": "2.3"}
    assert [page.post("/watches/new/", form).status_code for _ in range(3)] == [200, 200, 429]
