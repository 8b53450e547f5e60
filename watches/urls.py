from django.urls import path

from watches import feeds, views

app_name = "watches"

urlpatterns = [
    path("watches/new/", views.watch_new_view, name="new"),
    path("watches/<int:watch_id>/delete/", views.watch_delete_view, name="delete"),
    path("watches/feed/<str:token>/", feeds.WatchFeed(), name="watch-feed"),
    path("gpus/<slug:slug>/feed/", feeds.GpuPriceFeed(), name="gpu-feed"),
]
