from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic import RedirectView

from accounts.throttles import sign_in_view
from gpuatlas import health

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    # Sign-in attempts are throttled per client address and per account or known device (accounts/throttles.py).
    path("admin/login/", sign_in_view(admin.site.login)),
    path("admin/", admin.site.urls),
    path("i18n/", include("django.conf.urls.i18n")),
    path("accounts/login/", sign_in_view(auth_views.LoginView.as_view()), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/", include("accounts.urls")),
    path("api/v1/", include("api.urls")),
    # The unversioned addresses people guess lead to the current version's documentation.
    path("api/", RedirectView.as_view(pattern_name="api:index", query_string=True)),
    path("api/docs/", RedirectView.as_view(pattern_name="api:docs", query_string=True)),
    path("api/redoc/", RedirectView.as_view(pattern_name="api:redoc", query_string=True)),
    path("", include("watches.urls")),
    path("", include("catalog.urls")),
    path("", include("benchmarks_app.urls")),
    path("", include("fitcalc.urls")),
    path("", include("dashboard.urls")),
]

if settings.DEBUG:
    from django.contrib.staticfiles.urls import staticfiles_urlpatterns

    urlpatterns += staticfiles_urlpatterns()
