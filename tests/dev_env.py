"""pytest plugin, loaded by ``-p tests.dev_env`` (pyproject.toml) before pytest-django reads the
settings: the suite runs in the development mode (DEBUG=1, its built-in SECRET_KEY) unless the
environment sets DEBUG. Django's test runner still runs every test with DEBUG off, as production."""

import os

os.environ.setdefault("DEBUG", "1")
# Every test requests pages from one address (the test client's), many of them in some tests: the
# page render limit is tested with its own low rate (tests/test_cache_keys.py).
os.environ.setdefault("THROTTLE_PAGE_RENDER", "1000000/min")
