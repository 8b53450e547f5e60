"""Reads for accounts: the active API token behind a key, with its user; look-alike usernames."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connections, router
from django.db.models import Model

from accounts.models import ApiToken
from accounts.usernames import username_skeleton

Converter = Callable[[Any, Any, Any], Any]


@functools.cache
def _token_lookup_plan(alias: str) -> tuple[str, list[str], list[str], list[tuple[int, list[Converter], Any]]]:
    """The SQL, the attribute names of each model and the value converters, built once per database.

    Every API request with a token runs this lookup. Through the ORM (a filter with
    select_related) compiling the statement cost about 1 ms of CPU per request, most of what
    an authenticated ping costs; the statement never changes, so it is written out once here.
    The converters are those the ORM's compiler would apply (SQLite returns datetimes as text).
    """
    connection = connections[alias]

    def quote(name: str | None) -> str:
        assert name is not None  # concrete fields have columns
        return connection.ops.quote_name(name)

    user_model = get_user_model()
    columns, converters = [], []
    attnames: dict[type[Model], list[str]] = {ApiToken: [], user_model: []}
    for alias_name, model in (("t", ApiToken), ("u", user_model)):
        for field in model._meta.concrete_fields:
            attnames[model].append(field.attname)
            columns.append(f"{alias_name}.{quote(field.column)}")
            col = field.get_col(model._meta.db_table)
            found = connection.ops.get_db_converters(col) + col.get_db_converters(connection)
            if found:
                converters.append((len(columns) - 1, found, col))
    key_column = quote(ApiToken._meta.get_field("key_sha256").column)
    revoked_column = quote(ApiToken._meta.get_field("revoked_at").column)
    user_column = quote(ApiToken._meta.get_field("user").column)
    user_pk = quote(user_model._meta.pk.column)  # type: ignore[union-attr]
    # Identifiers only, quoted, from the models' metadata; the key is a query parameter.
    sql = (
        f"SELECT {', '.join(columns)} FROM {quote(ApiToken._meta.db_table)} t "  # noqa: S608
        f"JOIN {quote(user_model._meta.db_table)} u ON u.{user_pk} = t.{user_column} "
        f"WHERE t.{key_column} = %s AND t.{revoked_column} IS NULL"
    )
    return sql, attnames[ApiToken], attnames[user_model], converters


def api_token_get_active(*, key_sha256: str) -> ApiToken | None:
    """The unrevoked token with this key hash, its ``user`` loaded; None when there is none."""
    alias = router.db_for_read(ApiToken)
    sql, token_fields, user_fields, converters = _token_lookup_plan(alias)
    connection = connections[alias]
    with connection.cursor() as cursor:
        cursor.execute(sql, [key_sha256])
        row = cursor.fetchone()
    if row is None:
        return None
    values = list(row)
    for index, found, expression in converters:
        for converter in found:
            values[index] = converter(values[index], expression, connection)
    token = ApiToken.from_db(alias, token_fields, values[: len(token_fields)])
    token.user = get_user_model().from_db(alias, user_fields, values[len(token_fields) :])
    return token


def username_look_alike(*, username: str) -> str | None:
    """An existing username that looks the same as ``username`` but is another name, or None.

    Every existing name's skeleton is computed here: 62 ms a sign-up at 10,000 users, 0.75 s at
    100,000 (``python -m perf.bench_usernames``). Sign-ups are rare, and a stored skeleton
    column would have to follow every rename in the admin; past some 50,000 users it pays.
    """
    skeleton = username_skeleton(username)
    for existing in get_user_model().objects.values_list("username", flat=True).iterator():
        if existing != username and username_skeleton(existing) == skeleton:
            return existing
    return None
