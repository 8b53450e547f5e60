"""schemathesis, in-process, against /api/v1/schema/ with every built-in check.

Positive and negative generation (the default "all" mode), all phases schemathesis runs from a
pytest test (examples, coverage, fuzzing). Failing means a 5xx, a response that violates the
schema, schema-valid input rejected or schema-invalid input accepted.
"""

from __future__ import annotations

import os
from collections import Counter

import pytest
import schemathesis
from _pytest.nodes import Node
from django.core.cache import cache
from django.core.wsgi import get_wsgi_application
from django.test import override_settings
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from accounts.services import api_token_create
from api.serializers_fit import CROSS_FIELD_PARAMETERS as FIT_CROSS_FIELD_PARAMETERS
from benchmarks_app.comparison_rules import PRECISION_FAMILIES
from dashboard.ranking.use_cases import USE_CASES
from tests.factories import UserFactory
from tests.world import API_WORLD, world_build

# PostgreSQL refuses values SQLite stores (integers past 64 bits, NUL characters): fuzzed there too.
pytestmark = [pytest.mark.django_db, pytest.mark.services, pytest.mark.slow]

# Examples per operation and run. CI lowers it to stay in its time budget (.ci/run: 25 in the
# first pass, 5 on PostgreSQL).
MAX_EXAMPLES = int(os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "50"))

# schemathesis 4.32 renames the running test through ``node._nodeid``, which pytest 9 no longer
# has (nodes keep a structured ``_id``). Give nodes that attribute back, for reporting only.
if not hasattr(Node, "_nodeid"):
    Node._nodeid = property(  # type: ignore[attr-defined]
        lambda node: node.__dict__.get("_schemathesis_nodeid", node.nodeid),
        lambda node, value: node.__dict__.__setitem__("_schemathesis_nodeid", value),
    )

CASES: Counter[str] = Counter()
SKIPPED: Counter[str] = Counter()
HEADERS: dict[str, str] = {}
UNLIMITED = "1000000/min"


@pytest.fixture(params=["anonymous", "staff"])
def api_schema(request, db, settings, wsgi_keeps_test_connection):  # type: ignore[no-untyped-def]
    """The schema, with data behind it; the "staff" run sends a staff user's API token."""
    world_build(rows=API_WORLD)
    HEADERS.clear()
    if request.param == "staff":
        staff = UserFactory(username="curator", is_staff=True, is_superuser=True)
        _, key = api_token_create(user=staff, name="schemathesis")
        HEADERS["Authorization"] = f"Token {key}"
    rest = dict(settings.REST_FRAMEWORK)
    # Every scope kept (a scope without a rate is a server error), each lifted out of reach.
    rest["DEFAULT_THROTTLE_RATES"] = dict.fromkeys(rest["DEFAULT_THROTTLE_RATES"], UNLIMITED)
    with override_settings(REST_FRAMEWORK=rest):
        cache.clear()
        yield schemathesis.openapi.from_wsgi("/api/v1/schema/?format=json", get_wsgi_application())


schema = schemathesis.pytest.from_fixture("api_schema")


def _as_sent(value: object) -> str | None:
    """The value the server reads: Django's QueryDict.get gives the last of repeated values."""
    if isinstance(value, list):
        value = value[-1] if value else None
    return None if value is None else str(value)


def _precision_not_allowed(case) -> bool:  # type: ignore[no-untyped-def]
    """The rules the schema cannot express: each use case allows only some precisions, and the
    LLM use cases only some model sizes."""
    if case.path not in ("/api/v1/rankings/", "/api/v1/tiers/") or not isinstance(case.query, dict):
        return False
    use_case = USE_CASES.get(_as_sent(case.query.get("use_case")) or "training")
    if use_case is None:
        return False
    precision = _as_sent(case.query.get("precision"))
    size = _as_sent(case.query.get("model_size"))
    return (precision in PRECISION_FAMILIES and precision not in use_case.precision_families) or (
        use_case.is_llm and bool(size) and size not in use_case.model_sizes
    )


# Cross-parameter rules other than rankings' (documented in each operation's description): a
# 400 naming only these parameters may answer a request that is valid parameter by parameter.
# Fields an operation refuses by rules across fields or beyond the schema's reach: a price watch
# needs a GPU, a metric belongs to its kind, a ranking watch's query is a ranking question, a
# provider or GPU must exist, a webhook must be a public http(s) address.
WATCH_CROSS_FIELD = {"gpu", "metric", "query", "provider", "currency", "webhook_url"}
CROSS_FIELD = {"/api/v1/fit/": set(FIT_CROSS_FIELD_PARAMETERS), "/api/v1/watches/": WATCH_CROSS_FIELD}


@schema.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_api_conforms_to_its_schema(case, request):  # type: ignore[no-untyped-def]
    if HEADERS and case.operation.label in ("POST /api/v1/submissions/", "POST /api/v1/submissions/dry-run/"):
        # Authenticated submissions: the request schema is a bare `object` (api/views/submissions.py,
        # not this package) while the server validates against submission-1.schema.json, so
        # positive_data_acceptance cannot hold until that schema is embedded. The anonymous run
        # covers this operation (401). The dry run judges the same body by the same rules.
        SKIPPED[case.operation.label] += 1
        return
    CASES[case.operation.label] += 1
    if _precision_not_allowed(case):
        response = case.call(headers=HEADERS)
        # 400: the precision, or another invalid parameter found first, is named.
        assert response.status_code == 400, response.text
        assert response.json()["errors"], response.text
        case.validate_response(response, headers=HEADERS, excluded_checks=[positive_data_acceptance])
        return
    allowed = CROSS_FIELD.get(case.path)
    if allowed is None:
        case.call_and_validate(headers=HEADERS)
        return
    response = case.call(headers=HEADERS)
    if response.status_code == 400 and set(response.json().get("errors") or {"(none)": 1}) <= allowed:
        case.validate_response(response, headers=HEADERS, excluded_checks=[positive_data_acceptance])
    else:
        case.validate_response(response, headers=HEADERS)


@pytest.fixture(autouse=True, scope="module")
def _report_case_counts(request):  # type: ignore[no-untyped-def]
    yield
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if capture is None or not CASES:
        return
    with capture.global_and_fixture_disabled():
        print(f"\nschemathesis: {sum(CASES.values())} cases over {len(CASES)} operations")
        for label, count in sorted(CASES.items()):
            print(f"  {count:5d}  {label}")
        for label, count in sorted(SKIPPED.items()):
            print(f"  skipped with a staff token ({count} generated): {label}")
