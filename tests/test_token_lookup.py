"""The token lookup: the active token and its user, loaded in one query; revoked or unknown keys find nothing."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from accounts.models import ApiToken
from accounts.selectors import api_token_get_active
from accounts.services import api_token_create, api_token_revoke, token_hash
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def _fields(instance) -> dict:  # type: ignore[no-untyped-def]
    return {field.attname: getattr(instance, field.attname) for field in type(instance)._meta.concrete_fields}


def test_the_token_and_its_user_are_loaded_in_one_query(django_assert_num_queries):
    user = UserFactory(username="ada", is_staff=True, email="ada@example.org")
    token, key = api_token_create(user=user, name="laptop")
    used = timezone.now() - dt.timedelta(minutes=5)
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=used)

    with django_assert_num_queries(1):
        found = api_token_get_active(key_sha256=token_hash(key))
        assert found is not None and found.user.username == "ada"

    assert _fields(found) == _fields(ApiToken.objects.get(pk=token.pk))
    assert _fields(found.user) == _fields(get_user_model().objects.get(pk=user.pk))
    assert found.last_used_at == used and timezone.is_aware(found.last_used_at)
    assert found.user.is_staff is True and found.user.is_authenticated


def test_a_revoked_or_unknown_key_finds_nothing():
    user = UserFactory()
    token, key = api_token_create(user=user, name="old")
    other, other_key = api_token_create(user=user, name="current")
    assert api_token_revoke(user=user, token_id=token.pk)

    assert api_token_get_active(key_sha256=token_hash(key)) is None
    assert api_token_get_active(key_sha256=token_hash("not-a-key")) is None
    found = api_token_get_active(key_sha256=token_hash(other_key))
    assert found is not None and found.pk == other.pk


def test_no_key_starts_like_a_command_line_option():
    user = UserFactory()
    keys = [api_token_create(user=user, name=f"k{i}")[1] for i in range(400)]
    # Before, 1 key in 64 did: among 400, at least one with a probability of 99.8 %.
    assert not [key for key in keys if key.startswith("-")]
    assert len(set(keys)) == 400
