from django.urls import path

from catalog.views import gpus, prices

app_name = "catalog"

urlpatterns = [
    path("gpus/", gpus.gpu_list_view, name="gpu-list"),
    path("gpus/<slug:slug>/", gpus.gpu_detail_view, name="gpu-detail"),
    path("providers/", prices.provider_list_view, name="provider-list"),
    path("providers/health/", prices.price_health_view, name="price-health"),
]
