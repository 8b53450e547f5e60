from django.urls import path

from benchmarks_app import views

app_name = "benchmarks"

urlpatterns = [
    path("submit/", views.submit_view, name="submit"),
    path("submit/gpuatlas-bench.tar.gz", views.client_archive_view, name="client-archive"),
    path("submissions/<uuid:run_uuid>/", views.submission_detail_view, name="submission-detail"),
]
