from django.urls import path

from gpuatlas.render_limits import page_renders_limited
from watches import feeds, views

app_name = "watches"

urlpatterns = [
    path("watches/new/", views.watch_new_view, name="new"),
    path("watches/<int:watch_id>/delete/", views.watch_delete_view, name="delete"),
    path("watches/feed/<str:token>/", feeds.WatchFeed(), name="watch-feed"),
    # A window over every price observation of the GPU, on each request: a computed page.
    path("gpus/<slug:slug>/feed/", page_renders_limited(feeds.GpuPriceFeed()), name="gpu-feed"),
]
