from django.urls import path

from catalog.views import gpus, prices

app_name = "catalog"

urlpatterns = [
    path("gpus/", gpus.gpu_list_view, name="gpu-list"),
    path("providers/", prices.provider_list_view, name="provider-list"),
    path("providers/health/", prices.price_health_view, name="price-health"),
]
