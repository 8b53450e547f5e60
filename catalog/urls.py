from django.urls import path

from catalog.views import gpus, prices
from dashboard.gpu_views import gpu_detail_view

app_name = "catalog"

urlpatterns = [
    path("gpus/", gpus.gpu_list_view, name="gpu-list"),
    path("gpus/<slug:slug>/", gpu_detail_view, name="gpu-detail"),
    path("providers/", prices.provider_list_view, name="provider-list"),
    path("providers/health/", prices.price_health_view, name="price-health"),
]
