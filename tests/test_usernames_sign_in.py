"""Usernames are one name in any width or case, where they are compared, counted and stored; a
stranger's lockout of an account is short and never keeps its owner out.

Before: ``ｓec_dave`` (fullwidth s) signed in as ``sec_dave`` while ``sec_dave`` was getting 429
(the throttle counted the name case-folded but not NFKC-normalised, Django's form normalised it),
and anyone could lock an owner out for an hour by spending the account's allowance.
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework import throttling

from accounts.forms import AdminUserChangeForm, AdminUserCreationForm
from accounts.known_devices import COOKIE
from accounts.usernames import username_normal
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

PASSWORD = "a long enough passphrase 2026"
LOGIN = "/accounts/login/"


@pytest.fixture
def dave(settings):  # type: ignore[no-untyped-def]
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {
            **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
            "sign_in": "1000/min",  # the stranger's and the owner's addresses are all 127.0.0.1 here
            "sign_in_account": "3/10m",
        },
    }
    user = UserFactory(username="sec_dave")
    user.set_password(PASSWORD)
    user.save()
    return user


def sign_in(client: Client, username: str, password: str = PASSWORD) -> int:
    return client.post(LOGIN, {"username": username, "password": password}).status_code


def spend_the_allowance(username: str = "sec_dave") -> Client:
    """A stranger guesses until refused (three attempts in ten minutes, counting any made before)."""
    stranger = Client()
    statuses = [sign_in(stranger, username, "wrong guess") for _ in range(4)]
    assert statuses[-1] == 429 and set(statuses[:3]) <= {200, 429}, statuses
    return stranger


def test_one_name_in_any_width_or_case() -> None:
    assert username_normal("ｓec_dave") == username_normal("SEC_Dave") == username_normal(" sec_dave ") == "sec_dave"
    assert username_normal("ＳＴＲＡＳＳＥ") == "strasse"


def test_a_fullwidth_spelling_spends_the_same_allowance(dave) -> None:  # type: ignore[no-untyped-def]
    spend_the_allowance()
    assert sign_in(Client(), "sec_dave") == 429
    assert sign_in(Client(), "ｓec_dave") == 429
    assert sign_in(Client(), "SEC_DAVE") == 429


def test_a_name_typed_in_another_case_or_width_signs_in_to_the_account(dave) -> None:  # type: ignore[no-untyped-def]
    for spelling in ("SEC_Dave", "ｓｅｃ_ｄａｖｅ"):
        client = Client()
        assert sign_in(client, spelling) == 302
        assert client.get("/accounts/").status_code == 200


def test_the_owners_known_browser_signs_in_while_a_stranger_locks_the_account(dave) -> None:  # type: ignore[no-untyped-def]
    owner = Client()
    assert sign_in(owner, "sec_dave") == 302 and owner.cookies.get(COOKIE)
    owner.post("/accounts/logout/")
    spend_the_allowance()
    assert sign_in(Client(), "sec_dave") == 429  # a new browser waits
    assert sign_in(owner, "sec_dave") == 302  # the known one does not
    # A cookie for another account, or a forged one, is no exemption.
    forged = Client()
    known = owner.cookies[COOKIE].value
    forged.cookies[COOKIE] = known[:-1] + ("B" if known[-1] != "B" else "C")  # the signature's last character
    assert sign_in(forged, "sec_dave") == 429


def test_a_new_password_starts_a_new_count(dave) -> None:  # type: ignore[no-untyped-def]
    spend_the_allowance()
    assert sign_in(Client(), "sec_dave") == 429
    dave.set_password("another long passphrase 2027")
    dave.save()
    assert sign_in(Client(), "sec_dave", "another long passphrase 2027") == 302


def test_a_strangers_lockout_ends_within_two_windows(dave, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    clock = [1_800_000_000.0]
    monkeypatch.setattr(throttling.SimpleRateThrottle, "timer", staticmethod(lambda: clock[0]))
    spend_the_allowance()
    assert sign_in(Client(), "sec_dave") == 429
    clock[0] += 2 * 600
    assert sign_in(Client(), "sec_dave") == 302


def test_the_admin_refuses_a_second_account_of_the_same_name(dave) -> None:  # type: ignore[no-untyped-def]
    data = {"username": "ＳＥＣ_Dave", "password1": PASSWORD, "password2": PASSWORD, "usable_password": "true"}
    form = AdminUserCreationForm(data=data)
    assert not form.is_valid() and "username" in form.errors
    other = UserFactory(username="someone")
    change = AdminUserChangeForm(instance=other, data={"username": "Sec_Dave", "date_joined": other.date_joined})
    assert not change.is_valid() and "username" in change.errors
    keep = AdminUserChangeForm(instance=dave, data={"username": "sec_dave", "date_joined": dave.date_joined})
    keep.is_valid()
    assert "username" not in keep.errors


def test_sign_up_refuses_the_same_name_in_another_case(client, dave) -> None:  # type: ignore[no-untyped-def]
    response = client.post("/accounts/signup/", {"username": "Sec_Dave", "password1": PASSWORD, "password2": PASSWORD})
    assert response.status_code == 200 and get_user_model().objects.count() == 1
