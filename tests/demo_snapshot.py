"""The demo data loaded once per test process, then copied back for each module that asks for it.

``load_demo`` takes minutes (the catalogue, every lab import, the client fixtures, the serving
model's fit); a dozen modules read it. The first module of a process loads it and copies every
table beside itself (``demo_snapshot__<table>``, in the same database, so the copy survives
Django's ``flush``, which empties Django's own tables only); later modules get the rows back with
one ``INSERT ... SELECT`` per table inside one transaction (foreign keys are checked at its
commit) and the sequences set past the copied ids. Plain SQL that SQLite and PostgreSQL both
accept, on the test database's own connection.
"""

from __future__ import annotations

from django.apps import apps
from django.core.management.color import no_style
from django.db import connection, transaction

PREFIX = "demo_snapshot__"


def _tables() -> list[str]:
    return sorted(connection.introspection.django_table_names(only_existing=True, include_views=False))


def _quoted(name: str) -> str:
    """A table or column name from Django's introspection, quoted (no user input reaches SQL here)."""
    return connection.ops.quote_name(name)


def demo_snapshot_exists() -> bool:
    existing = set(connection.introspection.table_names())
    return bool(existing) and all(PREFIX + table in existing for table in _tables())


def demo_snapshot_take() -> None:
    """Copy every Django table as it is now (the freshly loaded demo)."""
    existing = set(connection.introspection.table_names())
    with transaction.atomic(), connection.cursor() as cursor:
        for table in _tables():
            copy = PREFIX + table
            if copy in existing:
                cursor.execute(f"DROP TABLE {_quoted(copy)}")
            cursor.execute(f"CREATE TABLE {_quoted(copy)} AS SELECT * FROM {_quoted(table)}")  # noqa: S608 (introspected names)


def demo_snapshot_restore() -> None:
    """Empty every Django table and copy the demo's rows back, then move each sequence past them."""
    tables = _tables()
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("TRUNCATE " + ", ".join(_quoted(t) for t in tables) + " CASCADE")
        else:
            for table in tables:
                cursor.execute(f"DELETE FROM {_quoted(table)}")  # noqa: S608 (introspected names)
        for table in tables:
            columns = ", ".join(_quoted(c.name) for c in connection.introspection.get_table_description(cursor, table))
            cursor.execute(
                f"INSERT INTO {_quoted(table)} ({columns}) SELECT {columns} FROM {_quoted(PREFIX + table)}"  # noqa: S608
            )
        for statement in connection.ops.sequence_reset_sql(no_style(), apps.get_models(include_auto_created=True)):
            cursor.execute(statement)
