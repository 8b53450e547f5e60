"""pytest plugin, loaded by ``-p tests.dev_env`` (pyproject.toml) before pytest-django reads the
settings: the suite runs in the development mode (DEBUG=1, its built-in SECRET_KEY) unless the
environment sets DEBUG. Django's test runner still runs every test with DEBUG off, as production."""

import os

os.environ.setdefault("DEBUG", "1")
