"""Throttles that cannot be dodged: the client address follows the deployment's proxy count
(TRUSTED_PROXIES -> DRF's NUM_PROXIES), and sign-in (site and admin), sign-up and token creation
are limited per address and per account, with a 429 page in both languages, failing open when
the cache is down."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client, override_settings

from accounts.models import ApiToken
from gpuatlas.cache import cache_settings
from tests.factories import UserFactory
from tests.redis_server import free_port

pytestmark = pytest.mark.django_db

PASSWORD = "a long enough passphrase 2026"


@pytest.fixture
def rates(settings):  # type: ignore[no-untyped-def]
    """Small limits, so that a test spends them in a few requests."""

    def set_rates(**scopes: str) -> None:
        settings.REST_FRAMEWORK = {
            **settings.REST_FRAMEWORK,
            "DEFAULT_THROTTLE_RATES": {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], **scopes},
        }

    return set_rates


def test_the_default_trusts_no_proxy():
    from django.conf import settings

    assert settings.TRUSTED_PROXIES == 0
    assert settings.REST_FRAMEWORK["NUM_PROXIES"] == 0


def test_a_rotating_x_forwarded_for_does_not_dodge_the_anonymous_throttle(client, rates):
    rates(anon="5/min")
    statuses = [
        client.get("/api/v1/ping/", HTTP_X_FORWARDED_FOR=forwarded).status_code
        for i in range(8)
        for forwarded in ([f"203.0.113.{i}"] if i % 2 else [f"203.0.113.{i}, 127.0.0.1"])
    ]
    assert statuses == [200] * 5 + [429] * 3


def test_behind_one_proxy_the_address_it_appended_is_the_client(client, rates, settings):
    rates(anon="3/min")
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    # The client writes anything before what our proxy appends: only the last entry counts.
    spoofed = [
        client.get("/api/v1/ping/", HTTP_X_FORWARDED_FOR=f"10.9.{i}.1, 198.51.100.7").status_code for i in range(5)
    ]
    assert spoofed == [200] * 3 + [429] * 2
    # Another client behind the same proxy has its own allowance.
    other = client.get("/api/v1/ping/", HTTP_X_FORWARDED_FOR="198.51.100.8")
    assert other.status_code == 200


@pytest.mark.parametrize("path", ["/accounts/login/", "/admin/login/"])
def test_wrong_passwords_are_throttled_per_address_and_the_right_one_then_waits(path, rates):
    rates(sign_in="5/min", sign_in_account="1000/hour")
    UserFactory(username="victim", password=PASSWORD, is_staff=True)
    client = Client()
    wrong = [client.post(path, {"username": "victim", "password": f"guess {i}"}).status_code for i in range(5)]
    assert wrong == [200] * 5  # the form again, with its error
    refused = client.post(path, {"username": "victim", "password": PASSWORD})
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) >= 1
    assert "Too many attempts" in refused.content.decode()
    assert "_auth_user_id" not in client.session
    # Another address may still sign in (the per-account limit is not spent).
    other = Client(REMOTE_ADDR="192.0.2.44")
    assert other.post(path, {"username": "victim", "password": PASSWORD}).status_code == 302


def test_sign_in_is_throttled_per_account_from_rotating_addresses(rates):
    rates(sign_in="1000/min", sign_in_account="4/hour")
    UserFactory(username="victim", password=PASSWORD)
    statuses = [
        Client(REMOTE_ADDR=f"192.0.2.{i}")
        .post("/accounts/login/", {"username": " Victim", "password": "x"})
        .status_code
        for i in range(6)
    ]
    assert statuses == [200] * 4 + [429] * 2


def test_the_429_page_is_in_chinese_for_a_chinese_visitor(rates):
    rates(sign_in="1/min")
    client = Client(HTTP_ACCEPT_LANGUAGE="zh-hans")
    client.post("/accounts/login/", {"username": "a", "password": "b"})
    refused = client.post("/accounts/login/", {"username": "a", "password": "b"})
    assert refused.status_code == 429
    body = refused.content.decode()
    assert "尝试次数过多" in body and "Too many attempts" not in body


def test_sign_ups_are_throttled_per_address(rates):
    rates(sign_up="3/hour")
    client = Client()
    statuses = [
        client.post(
            "/accounts/signup/", {"username": f"new{i}", "password1": PASSWORD, "password2": PASSWORD}
        ).status_code
        for i in range(5)
    ]
    assert statuses == [302] * 3 + [429] * 2
    assert get_user_model().objects.filter(username__startswith="new").count() == 3


def test_token_creation_is_throttled_per_account(rates):
    rates(token_create="3/hour")
    user = get_user_model().objects.create(username="maker")
    statuses = []
    for i in range(5):
        client = Client(REMOTE_ADDR=f"192.0.2.{i}")
        client.force_login(user)
        statuses.append(client.post("/accounts/", {"name": f"t{i}"}).status_code)
    assert statuses == [200] * 3 + [429] * 2
    assert ApiToken.objects.filter(user=user).count() == 3


def test_sign_in_fails_open_when_the_cache_is_down(rates):
    rates(sign_in="1/min", sign_in_account="1/hour")
    UserFactory(username="someone", password=PASSWORD)
    with override_settings(CACHES={"default": cache_settings(f"redis://127.0.0.1:{free_port()}/0", timeout_s=1)}):
        client = Client()
        assert client.post("/accounts/login/", {"username": "someone", "password": "no"}).status_code == 200
        assert client.post("/accounts/login/", {"username": "someone", "password": PASSWORD}).status_code == 302
