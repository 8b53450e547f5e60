"""Bytes of pages as a visitor gets them, in English and Chinese, through Django's test client on
whatever database DATABASE_URL names (the demo: ``manage.py load_demo``); prints one line per
page and language.

    DATABASE_URL=sqlite:////tmp/demo.sqlite3 .venv/bin/python -m perf.bench_page_bytes \\
        /gpus/h100-sxm5-80-gb/ "/?use_case=llm-serving" /fit/
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuatlas.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("urls", nargs="+")
    args = parser.parse_args()
    setup_test_environment()  # the test client's host and no throttle on a loop of requests
    client = Client()
    for url in args.urls:
        for language, _name in settings.LANGUAGES:
            client.cookies["django_language"] = language
            response = client.get(url)
            print(f"{response.status_code} {len(response.content):>9,} bytes  {language:<7} {url}")


if __name__ == "__main__":
    main()
