"""Stored payloads are compressed with lz4 rather than pglz, on PostgreSQL servers that have it.

A payload is about 14 KB of JSON, so PostgreSQL compresses every one on insert. pglz took
about 0.2 ms of the server's CPU per submission and lz4 about 0.04 ms (3,000 real payloads,
perf/RESULTS.md), for 4 % more space. Rows already stored keep their compression; SQLite and
servers built without lz4 are left as they are.
"""

from django.db import migrations

_TABLE = "benchmarks_app_rawsubmission"


def _lz4_available(schema_editor) -> bool:  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor != "postgresql":
        return False
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT enumvals FROM pg_settings WHERE name = 'default_toast_compression'")
        row = cursor.fetchone()
    return row is not None and "lz4" in (row[0] or [])


def _set_compression(method: str):  # type: ignore[no-untyped-def]
    def apply(apps, schema_editor) -> None:  # type: ignore[no-untyped-def]
        if _lz4_available(schema_editor):
            schema_editor.execute(f'ALTER TABLE "{_TABLE}" ALTER COLUMN "payload" SET COMPRESSION {method}')

    return apply


class Migration(migrations.Migration):
    dependencies = [("benchmarks_app", "0003_fewer_result_indexes")]

    operations = [migrations.RunPython(_set_compression("lz4"), _set_compression("pglz"))]
