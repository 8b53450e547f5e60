"""Ranking watches: a watch on the cost per million tokens of LLM serving (70B class, 20 tokens/s
per user) fires when a price import or a new measurement moves the figure under its threshold;
the question goes through the rankings' own parameters, so it answers what the ranking page shows."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.core import mail

from catalog.models import Gpu
from catalog.services.prices import price_import_file
from dashboard.selectors.ranking_params import ranking_params_from_query
from dashboard.selectors.rankings import rankings_compute
from gpuatlas import followups
from gpuatlas.followups import followup_after_commit
from llm.models import Scenario
from llm.tasks import serving_points_refresh
from tests.factories import OfferFactory, ProviderFactory, UserFactory, token_client
from tests.test_llm_serving_ranking import H100, H100_NVL, MI300X, _point
from tests.test_watches import curated_file
from tests.world import LLM_WORLD
from watches.models import Crossing, Watch
from watches.services.watches import watch_create
from watches.validation import WatchSpec

pytestmark = pytest.mark.django_db
WORLD = LLM_WORLD
QUESTION = {"use_case": "llm-serving", "model_size": "70b", "interactivity": "20", "price": "cheapest"}


@pytest.fixture
def serving(world):
    gpus = {g.slug: g for g in Gpu.objects.filter(slug__in=[H100, MI300X, H100_NVL])}
    OfferFactory(provider=ProviderFactory(slug="cloud-8", name="Cloud 8"), gpu=gpus[H100], gpu_count=8,
                 current_price_per_hour=Decimal("2.40") * 8)  # fmt: skip
    for slug, offline, server, interactive in ((H100, 3000, 2800, 1800), (MI300X, 3400, 2600, 1500)):
        _point(gpus[slug], count=8, scenario=Scenario.OFFLINE, per_gpu=offline, per_user=None)
        _point(gpus[slug], count=8, scenario=Scenario.SERVER, per_gpu=server, per_user=5.0)
        _point(gpus[slug], count=8, scenario=Scenario.INTERACTIVE, per_gpu=interactive, per_user=25.0)
    return gpus


def h100_cost() -> float:
    ranking = rankings_compute.uncached(params=ranking_params_from_query(QUESTION))
    return next(row.cost_per_million_tokens for row in ranking.rows if row.gpu_slug == H100)


def cost_watch(*, threshold: float, gpu: str = H100) -> Watch:
    watch, _ = watch_create(
        user=UserFactory(),
        spec=WatchSpec(
            kind="ranking",
            metric="cost_per_million_tokens",
            threshold=Decimal(f"{threshold:.6f}"),
            gpu=gpu,
            query=QUESTION,
            email="alerts@example.org",
        ),
    )
    return watch


def test_a_serving_cost_watch_fires_when_a_price_import_moves_it(serving, tmp_path):
    before = h100_cost()
    watch = cost_watch(threshold=before * 0.8)
    assert not watch.met and watch.last_value == pytest.approx(before, rel=1e-6)
    path = curated_file(tmp_path, [("h100.8x", "H100 SXM5 80GB", "12.00")], dt.datetime.now(dt.UTC))
    path.write_text(path.read_text().replace(",80,1,8,64,12.00,gpu,", ",80,8,8,64,12.00,,"), encoding="utf-8")
    assert price_import_file(path=path).ok
    after = h100_cost()
    assert after < before * 0.8
    crossing = Crossing.objects.get()
    assert crossing.watch_id == watch.pk and crossing.value == pytest.approx(after, rel=1e-6)
    assert crossing.cause["gpu"] == H100 and crossing.cause["price_provider"] == "Example Cloud"
    assert len(mail.outbox) == 1


def test_a_serving_cost_watch_fires_when_a_new_measurement_moves_it(serving, monkeypatch):
    before = h100_cost()
    watch = cost_watch(threshold=before * 0.9)
    any_gpu = cost_watch(threshold=before * 0.9, gpu="")
    asked: list[str] = []
    in_process = followups.followup_run
    monkeypatch.setattr(
        followups, "followup_run", lambda name, **kwargs: asked.append(name) or in_process(name, **kwargs)
    )
    # What the serving model's refresh asks for once its points are stored (none here: the watch stays).
    serving_points_refresh(source="llamacpp", refit=False)
    assert asked == ["watches.tasks.watches_evaluate_after_serving_model"]
    assert not Crossing.objects.exists()
    # A faster measured point at the interactive latency: more tokens per GPU-hour, a lower cost.
    _point(serving[H100], count=8, scenario=Scenario.INTERACTIVE, per_gpu=2600, per_user=25.0)
    followup_after_commit("watches.tasks.watches_evaluate_after_serving_model")
    assert h100_cost() < before * 0.9
    assert set(Crossing.objects.values_list("watch_id", flat=True)) == {watch.pk, any_gpu.pk}
    assert Crossing.objects.get(watch=any_gpu).cause["gpu"] == H100


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (
            {
                "kind": "ranking",
                "metric": "cost_per_million_tokens",
                "threshold": "1",
                "query": {"use_case": "training"},
            },
            "metric",
        ),
        (
            {"kind": "ranking", "metric": "perf_per_dollar", "threshold": "1", "query": {"use_case": "nope"}},
            "query.use_case",
        ),
        (
            {
                "kind": "ranking",
                "metric": "perf_per_dollar",
                "threshold": "1",
                "query": {"use_case": "llm-serving", "model_size": "2t"},
            },
            "query.model_size",
        ),
        (
            {
                "kind": "ranking",
                "metric": "perf_per_dollar",
                "threshold": "1",
                "query": {"use_case": "llm-serving", "gpu_price[h100-sxm5-80-gb]": "1"},
            },
            "query.gpu_price",
        ),
        ({"kind": "ranking", "metric": "price_per_gpu_hour", "threshold": "1", "query": {}}, "metric"),
    ],
)
def test_ranking_questions_are_checked_by_the_rankings_own_parameters(serving, body, field):
    response = token_client(UserFactory()).post("/api/v1/watches/", body, content_type="application/json")
    assert response.status_code == 400
    assert field in response.json()["errors"], response.json()


def test_a_ranking_watch_stores_the_normalised_question(serving):
    watch = cost_watch(threshold=1.0)
    assert watch.query == {"use_case": "llm-serving", "price": "cheapest"}
    assert watch.use_case == "llm-serving"
