"""Backup and restore round trip (docs/backup.md): pg_dump -Fc of the test database, pg_restore
into a fresh database, then the row count of every table and a checksum of the BenchmarkResult
rows must match.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid

import psycopg
import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from benchmarks_app.models import BenchmarkResult
from benchmarks_app.services import intake as intake_module
from benchmarks_app.services.peers import live_peers
from benchmarks_app.services.snapshot import catalog_snapshot_clear
from tests.factories import document_ingest, make_result, submission_document
from tests.world import INGEST_WORLD, world_build

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.slow,
    pytest.mark.skipif(not (shutil.which("pg_dump") and shutil.which("pg_restore")), reason="needs pg_dump"),
]

RESULTS_CHECKSUM = (
    "SELECT count(*), md5(coalesce(string_agg(r::text, '|' ORDER BY r.id), '')) FROM benchmarks_app_benchmarkresult r"
)


def _connection_args() -> tuple[dict[str, str], list[str]]:
    settings = connection.settings_dict
    env = {**os.environ}
    if settings.get("PASSWORD"):
        env["PGPASSWORD"] = settings["PASSWORD"]
    args = [
        "-h",
        settings["HOST"] or "127.0.0.1",
        "-p",
        str(settings["PORT"] or 5432),
        "-U",
        settings["USER"] or "postgres",
    ]
    return env, args


def _tables(cursor) -> list[str]:  # type: ignore[no-untyped-def]
    cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename")
    return [row[0] for row in cursor.fetchall()]


def _counts(cursor) -> dict[str, int]:  # type: ignore[no-untyped-def]
    counts = {}
    for table in _tables(cursor):
        cursor.execute(f'SELECT count(*) FROM "{table}"')  # noqa: S608 - names from pg_tables
        counts[table] = cursor.fetchone()[0]
    return counts


def test_pg_dump_and_restore_round_trip(transactional_db, tmp_path, monkeypatch):
    catalog_snapshot_clear()
    live_peers.clear()
    world_build(rows=INGEST_WORLD)
    monkeypatch.setattr(intake_module, "submission_enqueue", lambda *, submission_id: True)  # ingested below
    user = get_user_model().objects.create(username="backup")
    for index in range(12):
        document = submission_document(results=[make_result(median=600.0 + index), make_result(precision="fp16")])
        document["environment"]["os"] = f"Linux <b>{index}</b> 'quoted' \u4e2d\u6587"  # text that must survive
        document_ingest(document, submitter=user)
    assert BenchmarkResult.objects.count() == 24

    env, args = _connection_args()
    source = connection.settings_dict["NAME"]
    dump = tmp_path / "gpuatlas.dump"
    subprocess.run(["pg_dump", *args, "-Fc", "-d", source, "-f", str(dump)], env=env, check=True, timeout=120)
    assert dump.stat().st_size > 0

    restored = f"gpuatlas_dev_rel_restore_{uuid.uuid4().hex[:8]}"
    settings = connection.settings_dict
    admin_dsn = {
        "host": settings["HOST"] or "127.0.0.1",
        "port": settings["PORT"] or 5432,
        "user": settings["USER"] or "postgres",
        "password": settings.get("PASSWORD") or None,
    }
    with psycopg.connect(dbname="postgres", autocommit=True, **admin_dsn) as admin:
        admin.execute(f'CREATE DATABASE "{restored}"')
    try:
        subprocess.run(
            ["pg_restore", *args, "--no-owner", "--exit-on-error", "-d", restored, str(dump)],
            env=env,
            check=True,
            timeout=300,
        )
        with connection.cursor() as cursor:
            original_counts = _counts(cursor)
            cursor.execute(RESULTS_CHECKSUM)
            original_checksum = cursor.fetchone()
        with psycopg.connect(dbname=restored, **admin_dsn) as copy, copy.cursor() as cursor:
            restored_counts = _counts(cursor)
            cursor.execute(RESULTS_CHECKSUM)
            restored_checksum = cursor.fetchone()
            # Sequences come back too: the next result id continues after the restored ones.
            cursor.execute("SELECT last_value FROM benchmarks_app_benchmarkresult_id_seq")
            next_id = cursor.fetchone()[0]
    finally:
        with psycopg.connect(dbname="postgres", autocommit=True, **admin_dsn) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{restored}" WITH (FORCE)')

    assert restored_counts == original_counts
    assert original_counts["benchmarks_app_benchmarkresult"] == 24
    assert original_counts["benchmarks_app_rawsubmission"] == 12
    assert restored_checksum == original_checksum and original_checksum[0] == 24
    assert next_id >= max(BenchmarkResult.objects.values_list("pk", flat=True))
    print(
        f"\nbackup/restore: {len(original_counts)} tables, {sum(original_counts.values())} rows, "
        f"BenchmarkResult checksum {original_checksum[1]} identical after pg_restore"
    )
