"""Celery price-import tasks (eager in tests) and the import_prices command."""

from __future__ import annotations

import datetime as dt
from unittest import mock

import pytest
from django.core.management import CommandError, call_command
from django.db import OperationalError

from catalog import tasks
from catalog.models import ImportRun, Offer
from catalog.services.prices import price_import_file
from tests.factories import write_catalogue_file
from tests.world import PRICE_WORLD, world_build

pytestmark = pytest.mark.django_db

HEADER = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice\n"
GOOD = HEADER + "gpu_1x_h100_pcie,H100,1,26,225,2.49,us-east-1,,\n"


def test_import_task_returns_the_summary(tmp_path):
    world_build(rows=PRICE_WORLD)
    path = write_catalogue_file(tmp_path, "lambda", GOOD)
    result = tasks.price_import_file_task.apply(args=[str(path)]).get()
    assert result["offers_created"] == 1 and result["error"] == ""
    assert Offer.objects.get().provider.slug == "lambda"


def test_transient_database_errors_are_retried(tmp_path):
    world_build(rows=PRICE_WORLD)
    path = write_catalogue_file(tmp_path, "lambda", GOOD)
    calls = {"n": 0}

    def flaky(**kwargs):
        calls["n"] += 1
        if calls["n"] == 1:
            raise OperationalError("could not serialize access")
        return price_import_file(**kwargs)

    with mock.patch.object(tasks, "price_import_file", side_effect=flaky):
        result = tasks.price_import_file_task.apply(args=[str(path)])
    assert calls["n"] == 2
    assert result.successful() and result.get()["offers_created"] == 1


def test_one_providers_failure_does_not_stop_the_others(tmp_path):
    world_build(rows=PRICE_WORLD)
    write_catalogue_file(tmp_path, "lambda", GOOD)
    write_catalogue_file(tmp_path, "nebius", "InstanceType,Price\nbroken,1\n")
    write_catalogue_file(tmp_path, "runpod", GOOD)
    with mock.patch.object(
        tasks.price_import_file_task, "delay", wraps=lambda *a: tasks.price_import_file_task.apply(args=a)
    ) as delay:
        queued = tasks.prices_import_directory_task.apply(args=[str(tmp_path)]).get()
    assert len(queued) == 3 and delay.call_count == 3
    assert set(Offer.objects.values_list("provider__slug", flat=True)) == {"lambda", "runpod"}
    statuses = dict(ImportRun.objects.values_list("path", "status"))
    assert statuses[str(tmp_path / "v8/nebius/vms.csv")] == ImportRun.Status.FAILED


def test_directory_task_defaults_to_the_configured_folder(tmp_path, settings):
    settings.PRICE_IMPORT_DIR = str(tmp_path)
    write_catalogue_file(tmp_path, "lambda", GOOD)
    with mock.patch.object(tasks.price_import_file_task, "delay") as delay:
        queued = tasks.prices_import_directory_task.apply().get()
    assert queued == [str(tmp_path / "v8/lambda/vms.csv")]
    delay.assert_called_once_with(str(tmp_path / "v8/lambda/vms.csv"), None, str(tmp_path))


def test_command_prints_summary_and_rejections(tmp_path, capsys):
    world_build(rows=PRICE_WORLD)
    path = write_catalogue_file(tmp_path, "lambda", GOOD + "bad,H100,1,26,225,abc,us-east-1,,\n")
    call_command("import_prices", str(path), "--observed-at", "2026-01-01T00:00:00Z")
    out = capsys.readouterr().out
    assert "2 rows read, offers 1 created / 0 updated, 1 observations added" in out
    assert "line 3: Price 'abc' is not a number" in out
    assert Offer.objects.get().current_observed_at == dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def test_command_rejects_bad_arguments(tmp_path):
    with pytest.raises(CommandError, match="does not exist"):
        call_command("import_prices", str(tmp_path / "nope.csv"))
    path = write_catalogue_file(tmp_path, "lambda", GOOD)
    with pytest.raises(CommandError, match="not an ISO date"):
        call_command("import_prices", str(path), "--observed-at", "yesterday")
    unknown = tmp_path / "notes.csv"
    unknown.write_text("a,b\n1,2\n")
    with pytest.raises(CommandError, match="1 file\\(s\\) failed"):
        call_command("import_prices", str(unknown))


def test_fetch_task_enqueues_one_fetch_per_configured_cloud(settings):
    settings.PRICE_FETCH_CLOUDS = ["lambda", "vast"]
    with mock.patch.object(tasks.price_fetch_cloud_task, "delay") as delay:
        queued = tasks.prices_fetch_task.apply().get()
    assert queued == ["lambda", "vast"]
    assert [c.args for c in delay.call_args_list] == [("lambda",), ("vast",)]
    assert settings.CELERY_BEAT_SCHEDULE["prices-fetch"]["task"] == "catalog.tasks.prices_fetch_task"
