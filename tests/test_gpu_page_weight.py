"""The GPU page stays light however many configurations a GPU has been measured in: one row per
workload, and every configuration on the GPU's results page (a page at a time), each row linking
its results with their sources in the API."""

from __future__ import annotations

import re

import pytest
from django.db.models import Count
from django.urls import reverse

from benchmarks_app.models import ResultAggregate
from dashboard.gpu_views import RESULTS_PER_PAGE
from tests.factories import ResultAggregateFactory, WorkloadFactory
from tests.world import DASHBOARD_WORLD, world_build

pytestmark = pytest.mark.django_db

WORKLOADS = 40
CONFIGURATIONS = 12  # per workload: 480 on the busiest GPU, as the demo's H100 has ~500
# The page's bytes. With a row per configuration the page passed 190 KB in this world.
BYTE_BUDGET = 80_000


@pytest.fixture
def busy_world():
    world = world_build(rows=DASHBOARD_WORLD)
    h100 = world.gpus["h100"]
    for w in range(WORKLOADS):
        workload = WorkloadFactory(slug=f"serving-sweep-{w:02d}", name=f"Serving sweep {w:02d}", unit="tokens/s")
        for c in range(CONFIGURATIONS):
            ResultAggregateFactory(
                gpu=h100,
                workload=workload,
                precision="bf16",
                gpu_count=1 + c % 4,
                comparison_label=(
                    f"{workload.slug} · 1.0 · bf16 · model llama-3.1-70b, input {128 * (c + 1)} tokens, "
                    f"output {64 * (c + 1)} tokens, concurrency {2**c}"
                ),
                n=1 + (c * 7) % 5,
                median=1000.0 + c,
            )
    return world


def _busiest_gpu_slug() -> str:
    row = ResultAggregate.objects.values("gpu__slug").annotate(c=Count("id")).order_by("-c").first()
    assert row is not None
    return row["gpu__slug"]


def test_the_busiest_gpu_page_stays_under_its_byte_budget(busy_world, client):
    slug = _busiest_gpu_slug()
    assert slug == busy_world.gpus["h100"].slug
    response = client.get(reverse("dashboard:gpu-detail", args=[slug]))
    assert response.status_code == 200
    html = response.content.decode()
    assert len(response.content) < BYTE_BUDGET, len(response.content)
    summary = re.search(r'<table id="results-summary">.*?</table>', html, re.S)
    assert summary is not None
    rows = summary.group(0).count("<tr>") - 1  # the header's row
    own_workloads = ResultAggregate.objects.filter(gpu__slug=slug).values("workload").distinct().count()
    assert rows == own_workloads
    # Each workload's row is its most measured configuration and links its full list.
    results_url = reverse("dashboard:gpu-results", args=[slug])
    assert f'href="{results_url}?workload=serving-sweep-07">{CONFIGURATIONS}</a>' in html
    assert f'href="{results_url}"' in html
    lines = {w.line.workload_slug: w.line for w in response.context["page"].workloads}
    assert lines["serving-sweep-07"].n == max(
        ResultAggregate.objects.filter(gpu__slug=slug, workload__slug="serving-sweep-07").values_list("n", flat=True)
    )


def test_every_configuration_is_on_the_results_pages_with_a_link_to_its_sources(busy_world, client):
    slug = _busiest_gpu_slug()
    url = reverse("dashboard:gpu-results", args=[slug])
    keys: set[str] = set()
    page = 1
    while True:
        response = client.get(url, {"page": page})
        assert response.status_code == 200
        found = re.findall(
            r"/api/v1/results/\?gpu=" + re.escape(slug) + r"&amp;comparison_key=([0-9a-f]+)", response.content.decode()
        )
        assert len(found) <= RESULTS_PER_PAGE
        keys |= set(found)
        if not response.context["page"].has_next():
            break
        page += 1
    assert keys == set(ResultAggregate.objects.filter(gpu__slug=slug).values_list("comparison_key", flat=True))
    assert page == -(-ResultAggregate.objects.filter(gpu__slug=slug).count() // RESULTS_PER_PAGE)

    one = client.get(url, {"workload": "serving-sweep-03"})
    assert one.status_code == 200
    assert one.context["page"].paginator.count == CONFIGURATIONS


@pytest.mark.parametrize("query", [{"workload": "no-such-workload"}, {"workload": "<script>"}])
def test_an_unknown_workload_is_a_400_naming_the_field(busy_world, client, query):
    response = client.get(reverse("dashboard:gpu-results", args=[busy_world.gpus["h100"].slug]), query)
    assert response.status_code == 400
    assert "workload" in response.content.decode()
    assert "<script>" not in response.content.decode().split("<main>", 1)[1]


def test_an_unknown_gpu_results_page_is_a_404(db, client):
    assert client.get(reverse("dashboard:gpu-results", args=["no-such-gpu"])).status_code == 404
