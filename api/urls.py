from django.urls import path, re_path
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView

from api.views import benchmarks, catalog, moderation, multi_gpu, prices, rankings, serving_points, watches
from api.views.base import ApiNotFoundView, PingView
from api.views.fit import FitView
from api.views.fit_models import FitModelsView
from api.views.fit_serving import FitServingView
from api.views.index import ApiIndexView, LocalisedRedocView, LocalisedSwaggerView
from api.views.submission_dry_run import SubmissionDryRunView
from api.views.submissions import SubmissionCreateView, SubmissionDetailView

app_name = "api"

urlpatterns = [
    path("", ApiIndexView.as_view(), name="index"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", LocalisedSwaggerView.as_view(url_name="api:schema"), name="docs"),
    path("redoc/", LocalisedRedocView.as_view(url_name="api:schema"), name="redoc"),
    path("ping/", PingView.as_view(), name="ping"),
    path("gpus/", catalog.GpuListView.as_view(), name="gpu-list"),
    path("gpus/<path:slug>/multi-gpu/", multi_gpu.GpuMultiGpuView.as_view(), name="gpu-multi-gpu"),
    # <path:...>: any slug reaches the view, so a strange one is a JSON 404, not Django's HTML one.
    path("gpus/<path:slug>/", catalog.GpuDetailView.as_view(), name="gpu-detail"),
    path("architectures/", catalog.ArchitectureListView.as_view(), name="architecture-list"),
    path("providers/", catalog.ProviderListView.as_view(), name="provider-list"),
    path("offers/", prices.OfferListView.as_view(), name="offer-list"),
    path("prices/", prices.PriceListView.as_view(), name="price-list"),
    path("workloads/", benchmarks.WorkloadListView.as_view(), name="workload-list"),
    path("results/", benchmarks.ResultListView.as_view(), name="result-list"),
    path("aggregates/", benchmarks.AggregateListView.as_view(), name="aggregate-list"),
    path("serving-points/", serving_points.ServingPointListView.as_view(), name="serving-point-list"),
    path("rankings/", rankings.RankingView.as_view(), name="rankings"),
    path("tiers/", rankings.TierListView.as_view(), name="tiers"),
    path("fit/", FitView.as_view(), name="fit"),
    path("fit/serving/", FitServingView.as_view(), name="fit-serving"),
    path("fit/models/", FitModelsView.as_view(), name="fit-models"),
    path("submissions/", SubmissionCreateView.as_view(), name="submission-create"),
    path("submissions/dry-run/", SubmissionDryRunView.as_view(), name="submission-dry-run"),
    path("submissions/<uuid:run_uuid>/", SubmissionDetailView.as_view(), name="submission-detail"),
    path("watches/", watches.WatchListView.as_view(), name="watch-list"),
    path("watches/<int:watch_id>/", watches.WatchDetailView.as_view(), name="watch-detail"),
    path("moderation/submissions/", moderation.ModerationQueueView.as_view(), name="moderation-queue"),
    path("moderation/submissions/approve/", moderation.ModerationApproveView.as_view(), name="moderation-approve"),
    path("moderation/submissions/reject/", moderation.ModerationRejectView.as_view(), name="moderation-reject"),
    # Anything else under /api/v1/ is a JSON 404, not the site's HTML page. [\s\S] rather than
    # (?s). so that a path with a newline lands here too and reverse() still works.
    re_path(r"^[\s\S]*$", extend_schema(exclude=True)(ApiNotFoundView).as_view(), name="not-found"),
]
