"""Settings parsing: malformed environment values fail with a message naming the variable."""

import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from gpuatlas.env import env_bool, env_broker_url, env_database, env_int, env_list


def test_empty_database_url_means_sqlite():
    config = env_database("DATABASE_URL", "/tmp/x.sqlite3", environ={})
    assert config["ENGINE"] == "django.db.backends.sqlite3"
    assert config["NAME"] == "/tmp/x.sqlite3"


def test_postgres_database_url_is_parsed():
    config = env_database(
        "DATABASE_URL", "unused", environ={"DATABASE_URL": "postgres://postgres@127.0.0.1:5432/gpuatlas"}
    )
    assert config["ENGINE"] == "django.db.backends.postgresql"
    assert (config["HOST"], config["PORT"], config["NAME"], config["USER"]) == (
        "127.0.0.1",
        5432,
        "gpuatlas",
        "postgres",
    )


@pytest.mark.parametrize(
    "value, fragment",
    [
        ("mysql-ish:/nothing", "scheme"),
        ("http://example.org/db", "scheme 'http'"),
        ("postgres://postgres@127.0.0.1:notaport/gpuatlas", "port"),
        ("postgres://postgres@127.0.0.1:5432/", "names no database"),
    ],
)
def test_malformed_database_url_names_the_variable(value, fragment):
    with pytest.raises(ImproperlyConfigured) as excinfo:
        env_database("DATABASE_URL", "unused", environ={"DATABASE_URL": value})
    assert "DATABASE_URL" in str(excinfo.value)
    assert fragment in str(excinfo.value)


def test_booleans_are_strict():
    assert env_bool("DEBUG", False, environ={"DEBUG": "yes"}) is True
    assert env_bool("DEBUG", True, environ={"DEBUG": "0"}) is False
    with pytest.raises(ImproperlyConfigured, match="DEBUG='maybe' is not a boolean"):
        env_bool("DEBUG", True, environ={"DEBUG": "maybe"})


def test_integers_and_lists_are_strict():
    assert env_int("N", 3, environ={"N": "7"}) == 7
    with pytest.raises(ImproperlyConfigured, match="N='seven' is not an integer"):
        env_int("N", 3, environ={"N": "seven"})
    with pytest.raises(ImproperlyConfigured, match="at least 1"):
        env_int("N", 3, minimum=1, environ={"N": "0"})
    assert env_list("ALLOWED_HOSTS", [], environ={"ALLOWED_HOSTS": "a.org, b.org"}) == ["a.org", "b.org"]
    with pytest.raises(ImproperlyConfigured, match="empty item"):
        env_list("ALLOWED_HOSTS", [], environ={"ALLOWED_HOSTS": "a.org,,b.org"})


def test_broker_url_must_be_redis_or_amqp():
    assert env_broker_url("CELERY_BROKER_URL", environ={}) == ""
    assert env_broker_url("CELERY_BROKER_URL", environ={"CELERY_BROKER_URL": "redis://127.0.0.1:6379/0"})
    with pytest.raises(ImproperlyConfigured, match="CELERY_BROKER_URL"):
        env_broker_url("CELERY_BROKER_URL", environ={"CELERY_BROKER_URL": "127.0.0.1:6379"})


def test_manage_py_reports_a_malformed_database_url_without_a_traceback_of_ours():
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        env={"DATABASE_URL": "postgres://postgres@127.0.0.1:nope/gpuatlas", "PATH": "/usr/bin:/bin", "DEBUG": "1"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "DATABASE_URL is malformed: port 'nope' is not a number." in result.stderr


def test_production_requires_a_secret_key():
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='gpuatlas.settings'; django.setup()",
        ],
        env={"DEBUG": "0", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "SECRET_KEY must be set when DEBUG is off" in result.stderr
