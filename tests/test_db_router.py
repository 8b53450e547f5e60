"""Read-replica routing: reads to the replica, writes and read-your-writes to the primary."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from types import SimpleNamespace

import pytest
from django.http import HttpResponse
from django.test import RequestFactory

from benchmarks_app.models import RawSubmission
from gpuatlas import db_router
from gpuatlas.db_router import PrimaryPinMiddleware, PrimaryReplicaRouter, primary_pinned


class FakeConnections:
    """Stands in for django.db.connections: which aliases exist, and whether default is in a transaction."""

    def __init__(self, *, replica: bool, in_atomic_block: bool = False) -> None:
        self.settings = {"default": {}} | ({"replica": {}} if replica else {})
        self.default = SimpleNamespace(in_atomic_block=in_atomic_block)

    def __getitem__(self, alias: str):
        return self.default


@pytest.fixture
def router(monkeypatch):
    monkeypatch.setattr(db_router, "connections", FakeConnections(replica=True))
    token = db_router.primary_pin_enter()
    db_router._pinned.set(False)
    yield PrimaryReplicaRouter()
    db_router.primary_pin_exit(token)


def test_reads_go_to_the_replica_and_writes_to_the_primary(router):
    assert router.db_for_read(RawSubmission) == "replica"
    assert router.db_for_write(RawSubmission) == "default"


def test_after_a_write_reads_stay_on_the_primary(router):
    router.db_for_write(RawSubmission)
    assert router.db_for_read(RawSubmission) == "default"


def test_reads_inside_a_transaction_use_the_primary(router, monkeypatch):
    monkeypatch.setattr(db_router, "connections", FakeConnections(replica=True, in_atomic_block=True))
    assert router.db_for_read(RawSubmission) == "default"


def test_pinned_block_reads_from_the_primary(router):
    with primary_pinned():
        assert router.db_for_read(RawSubmission) == "default"
    assert router.db_for_read(RawSubmission) == "replica"


def test_without_a_replica_everything_uses_the_primary(monkeypatch):
    monkeypatch.setattr(db_router, "connections", FakeConnections(replica=False))
    assert PrimaryReplicaRouter().db_for_read(RawSubmission) == "default"


def test_only_the_primary_is_migrated(router):
    assert router.allow_migrate("default", "benchmarks_app") is True
    assert router.allow_migrate("replica", "benchmarks_app") is False


def test_each_request_starts_unpinned_and_unsafe_methods_pin(router):
    seen = []

    def view(request):
        seen.append(router.db_for_read(RawSubmission))
        router.db_for_write(RawSubmission)  # the view writes: pins the rest of this request
        seen.append(router.db_for_read(RawSubmission))
        return HttpResponse()

    middleware = PrimaryPinMiddleware(view)
    factory = RequestFactory()
    middleware(factory.get("/"))
    middleware(factory.get("/"))  # the first request's write must not pin this one
    middleware(factory.post("/"))
    assert seen == ["replica", "default", "replica", "default", "default", "default"]
    assert router.db_for_read(RawSubmission) == "replica"


def test_replica_url_configures_alias_router_and_middleware(tmp_path):
    """With DATABASE_REPLICA_URL set, queries really go to the replica, which may lag.

    The "replica" is a file copy of the primary taken after migrating: a replica frozen in time,
    i.e. one with infinite replication lag, so which alias answered is visible in the counts.
    """
    primary, replica = tmp_path / "primary.sqlite3", tmp_path / "replica.sqlite3"
    code = textwrap.dedent(
        f"""
        import os, shutil, django
        os.environ["DJANGO_SETTINGS_MODULE"] = "gpuatlas.settings"
        django.setup()
        from django.conf import settings
        from django.core.management import call_command
        from django.contrib.auth.models import User
        from gpuatlas.db_router import _pinned
        call_command("migrate", verbosity=0)
        call_command("migrate", database="replica", verbosity=0)  # must be a no-op (allow_migrate)
        shutil.copyfile({str(primary)!r}, {str(replica)!r})
        _pinned.set(False)  # migrate runs in a process of its own in production; its data migrations wrote
        print(sorted(settings.DATABASES), settings.DATABASE_ROUTERS[0])
        print("gpuatlas.db_router.PrimaryPinMiddleware" in settings.MIDDLEWARE)
        print(User.objects.all().db, User.objects.count())
        User.objects.create(username="written")
        print(User.objects.all().db, User.objects.count())
        _pinned.set(False)  # what PrimaryPinMiddleware does at the start of the next request
        print(User.objects.all().db, User.objects.count())
        """
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "DEBUG": "1",
        "DATABASE_URL": f"sqlite:///{primary}",
        "DATABASE_REPLICA_URL": f"sqlite:///{replica}",
    }
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:5] == [
        "['default', 'replica'] gpuatlas.db_router.PrimaryReplicaRouter",
        "True",
        "replica 0",
        "default 1",  # read-your-writes: after the write, reads stay on the primary
        "replica 0",  # a later request reads the (lagging) replica
    ]
