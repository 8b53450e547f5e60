from django.urls import path

from dashboard import gpu_views, views

app_name = "dashboard"

urlpatterns = [
    path("", views.rankings_view, name="rankings"),
    path("tiers/", views.tiers_view, name="tiers"),
    path("compare/", views.compare_view, name="compare"),
    path("gpus/<slug:slug>/", gpu_views.gpu_detail_view, name="gpu-detail"),
    path("gpus/<slug:slug>/results/", gpu_views.gpu_results_view, name="gpu-results"),
    path("gpus/<slug:slug>/training-runs/", gpu_views.gpu_training_runs_view, name="gpu-training-runs"),
    path("architectures/", views.architectures_view, name="architectures"),
    path("open-data/", views.open_data_view, name="open-data"),
    path("llm-model/", views.llm_model_view, name="llm-model"),
]
