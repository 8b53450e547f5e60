"""Admin-only URLconf for the price-curation admin tests (isolates them from unrelated URL modules)."""

from django.contrib import admin
from django.urls import path

urlpatterns = [path("admin/", admin.site.urls)]
